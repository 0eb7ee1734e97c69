#!/bin/bash
# Call 1 (issue 46, gpu46): GPU tests, then decode: attention sweep, step profile, batch 1 at 8K-128K, batched 8/64, long-output run.
set -u; T0=$(date +%s); source .gpu/g46/setup.sh; cd $G/code
timeout 170 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider -x 2>&1 | tee $OUT/gputests.txt | tail -8
echo "tests done $(( $(date +%s) - T0 )) s"
timeout $(( 585 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --profile $OUT/profile --skip continuous,table,decode,step,attention,bare,prefill --step-modes triton-cublas,triton --decode-modes triton,triton-cublas --batched-rows 8,64 2>&1 | grep -v -i warn | tee $OUT/bench.txt | cut -c1-700
echo "total $(( $(date +%s) - T0 )) s"
