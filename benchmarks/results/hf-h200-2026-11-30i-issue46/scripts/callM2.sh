#!/bin/bash
# Issue 46, seventeenth pass, acceptance on one card (carry [".gpu/g46"]), right after callM1.sh:
# bench_hf.py's decode at batch 1 after 8K / 32K / 128K and the batched rows 8 / 32 / 64 of 8K
# answers, the engine's own configuration.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout $(( 590 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl \
  --skip move,first,continuous,table,decode,step,attention,bare,prefill,sweep,long,ops46,profile46 \
  --batched-rows 8,32,64 --decode-modes triton 2>&1 | grep -v -i warn > $OUT/bench.txt
grep -v gemm_choices $OUT/bench.txt | python3 -c "
import json,sys
for line in sys.stdin:
    try: r=json.loads(line)
    except Exception: print(line[:400]); continue
    if r.get('kind') in ('ceilings','decode_lengths','decode_length','decode_batched'):
        print({k:v for k,v in r.items() if k in ('kind','context','rows','read_gbps','read_best_gbps','ms_per_step','bound_ms','ratio','ratio_at_best_read','bytes_bound_ms','ratio_steps','ms_per_step_steps')})
"
echo "total $(( $(date +%s) - T0 )) s"
