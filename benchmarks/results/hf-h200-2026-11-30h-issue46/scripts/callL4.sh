#!/bin/bash
# Issue 46, sixteenth pass, call L4 (carry [".gpu/g46"]): bench_hf.py's batched 64/32 rows of 8K
# answers with the balanced splits' least keys by the engine's rule (auto: 1,024 at 128 pairs and
# more) against 128 as before, in one process.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout $(( 590 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl \
  --skip move,first,continuous,table,decode,step,attention,bare,prefill,sweep,long,ops46,profile46,lengths \
  --batched-rows ${ROWS:-64,32} --split-min-keys ${KEYS:-auto,128} --decode-modes triton 2>&1 | grep -v -i warn > $OUT/bench.txt
grep -v gemm_choices $OUT/bench.txt | grep -i "batched\|split_target\|ceilings\|Error\|error" | python3 -c "
import json,sys
for line in sys.stdin:
    try: r=json.loads(line)
    except Exception: print(line[:400]); continue
    r.pop('gemm',None); print({k:v for k,v in r.items() if k in ('kind','rows','split_target','min_keys','read_gbps','read_best_gbps','ms_per_step_steps','bytes_bound_ms','ratio_steps','ratio_at_best_read','capture_ms','rows_per_step')})
"
echo "total $(( $(date +%s) - T0 )) s"
