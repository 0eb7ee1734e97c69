#!/bin/bash
# Issue 46, sixteenth pass, call L5 (carry [".gpu/g46"]): bench_hf.py's batched 64/32 rows of 8K
# answers with the split stage's candidates 32/w2s3 swapped for 32/w2s2 (the 64-row 4,096-key
# leader in calls L1-L3) against the engine's five, in one process.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout $(( 570 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl \
  --skip move,first,continuous,table,decode,step,attention,bare,prefill,sweep,long,ops46,profile46,lengths \
  --batched-rows 64,32 --split-configs "64/w4s2,128/w4s2,64/w4s3,128/w8s3,32/w2s2:engine" --decode-modes triton 2>&1 | grep -v -i warn > $OUT/bench.txt
grep -v gemm_choices $OUT/bench.txt | grep -i "batched\|split_target\|ceilings\|attention_choices\|Error\|error" | python3 -c "
import json,sys
for line in sys.stdin:
    try: r=json.loads(line)
    except Exception: print(line[:400]); continue
    r.pop('gemm',None); print({k:v for k,v in r.items() if k in ('kind','rows','split_target','candidates','read_gbps','read_best_gbps','ms_per_step_steps','bytes_bound_ms','ratio_steps','ratio_at_best_read','capture_ms','attention')})
"
echo "total $(( $(date +%s) - T0 )) s"
