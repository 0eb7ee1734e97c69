#!/bin/bash
# Issue 46, sixteenth pass, call L6 (carry [".gpu/g46"]), the session's last device seconds:
# bench_hf.py's batched 64 rows of 4K answers at split targets 1,024, 2,048, 1,024 in one process
# (the target of 1,024 led at equal lengths alone: calls L1, L2).
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout $(( 215 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl \
  --skip move,first,continuous,table,decode,step,attention,bare,prefill,sweep,long,ops46,profile46,lengths \
  --batched-rows 64 --batched-longest 4096 --split-targets 1024,2048,1024 --decode-modes triton 2>&1 | grep -v -i warn > $OUT/bench.txt
grep -v gemm_choices $OUT/bench.txt | grep -i "batched\|split_target\|ceilings\|Error\|error" | python3 -c "
import json,sys
for line in sys.stdin:
    try: r=json.loads(line)
    except Exception: print(line[:400]); continue
    r.pop('gemm',None); print({k:v for k,v in r.items() if k in ('kind','rows','split_target','read_gbps','ms_per_step_steps','bytes_bound_ms','ratio_steps','capture_ms','attention')})
"
echo "total $(( $(date +%s) - T0 )) s"
