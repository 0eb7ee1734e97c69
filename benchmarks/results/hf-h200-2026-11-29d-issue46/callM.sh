#!/bin/bash
# Session 2026-11-29d call M (issue 46): split-K GEMV; step profile, batch 1 with and without it, batched 8/64 with it, GPU tests.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 360 python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --profile $OUT/profile --skip continuous,table,decode,step,attention,bare,prefill,sweep,long --step-modes triton-cublas,triton --decode-modes triton-cublas,triton --batched-rows 8,64 2>&1 | grep -v -i warn | tee $OUT/bench.txt | cut -c1-700
echo "bench done $(( $(date +%s) - T0 )) s"
timeout $(( 585 - ($(date +%s) - T0) )) python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tee $OUT/gputests.txt | tail -15
echo "total $(( $(date +%s) - T0 )) s"
