#!/bin/bash
# Issue 46, prepared at the sixteenth pass for the next card (carry [".gpu/g46"], about 9 minutes):
# bench_hf.py's batched 64/32 rows of 8K answers as the engine runs them, without the norms and
# rotary, without the attention, and as the engine again, in one process: the most that fusing
# the small kernels away could save a step, and the attention's own share of a step.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout $(( 590 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl \
  --skip move,first,continuous,table,decode,step,attention,bare,prefill,sweep,long,ops46,profile46,lengths \
  --batched-rows ${ROWS:-64,32} --ablate "${ABLATE:-none:norms,rope:attention:none}" --decode-modes triton 2>&1 | grep -v -i warn > $OUT/bench.txt
grep -v gemm_choices $OUT/bench.txt | grep -i "batched\|split_target\|ceilings\|Error\|error" | python3 -c "
import json,sys
for line in sys.stdin:
    try: r=json.loads(line)
    except Exception: print(line[:400]); continue
    r.pop('gemm',None); print({k:v for k,v in r.items() if k in ('kind','rows','ablated','read_gbps','ms_per_step_steps','bytes_bound_ms','ratio_steps','rows_per_step','steps')})
"
echo "total $(( $(date +%s) - T0 )) s"
