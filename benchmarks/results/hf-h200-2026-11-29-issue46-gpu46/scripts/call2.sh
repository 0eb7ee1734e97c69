#!/bin/bash
# Call 2 (issue 46, gpu46): after the admission change: batch 1 at 8K-128K, batched 8/32/64, long-output run.
set -u; T0=$(date +%s); source .gpu/g46/setup.sh; cd $G/code
timeout 570 python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --profile $OUT/profile --skip continuous,table,decode,step,attention,bare,prefill,sweep,profile46 --decode-modes triton --batched-rows 8,32,64 2>&1 | grep -v -i warn | tee $OUT/bench.txt | grep -v gemm_choices | cut -c1-900
echo "total $(( $(date +%s) - T0 )) s"
