#!/bin/bash
# Issue 46, seventeenth pass (carry [".gpu/g46"]): the read ceiling in 5 processes x 3 buffers
# (exp_ceiling.py), then bench_hf.py's batched 64 rows in two processes, one after the other, on
# one machine: does the step or the ceiling move from one process to the next?
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
for p in 1 2 3 4 5; do python3 .gpu/g46/exp_ceiling.py $p; done | tee $OUT/ceiling.jsonl
for p in 1 2; do
  timeout $(( 580 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench$p.jsonl \
    --skip move,first,continuous,table,decode,step,attention,bare,prefill,sweep,long,ops46,profile46,lengths \
    --batched-rows 64 --decode-modes triton > /dev/null 2>&1
  grep '"ceilings"\|"decode_batched"' $OUT/bench$p.jsonl | cut -c1-330
  echo "process $p at $(( $(date +%s) - T0 )) s"
done
