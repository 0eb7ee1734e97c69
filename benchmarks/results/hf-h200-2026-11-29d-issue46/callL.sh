#!/bin/bash
# Session 2026-11-29d call L (issue 46): split-K GEMV; step profile and batch 1 with and without it, GPU tests.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 330 python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --profile $OUT/profile --skip continuous,table,decode,step,attention,bare,prefill,sweep,long,batched --step-modes triton-cublas,triton --decode-modes triton,triton-cublas 2>&1 | grep -v -i warn | tee $OUT/bench.txt | cut -c1-900
echo "bench done $(( $(date +%s) - T0 )) s"
timeout $(( 585 - ($(date +%s) - T0) )) python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tee $OUT/gputests.txt | tail -15
echo "total $(( $(date +%s) - T0 )) s"
