#!/bin/bash
# Session 2026-11-29d call O (issue 46): GPU tests; batch 1 again; batched 8/64 at attention split targets 1024 and 2048.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 160 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tee $OUT/gputests.txt | tail -4
echo "tests done $(( $(date +%s) - T0 )) s"
timeout $(( 588 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --skip continuous,table,decode,step,attention,bare,prefill,sweep,profile46,long --decode-modes triton --batched-rows 8,64 --split-targets 1024,2048 2>&1 | grep -v -i warn | tee $OUT/bench.txt | grep -v "gemm_choices" | cut -c1-420
echo "total $(( $(date +%s) - T0 )) s"
