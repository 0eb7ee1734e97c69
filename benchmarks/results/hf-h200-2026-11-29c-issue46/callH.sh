#!/bin/bash
# Session 2026-11-29c call H (issue 46, 244641e): the long-output run (64 single requests of 8K-token answers) and batched decode with parked rows.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 570 python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --skip continuous,table,decode,step,attention,bare,prefill,sweep,profile46,lengths --decode-modes triton-cublas --batched-rows 8,64 2>&1 | grep -v -i warn | tee $OUT/bench.txt | grep -v gemm_choices | cut -c1-600
echo "total $(( $(date +%s) - T0 )) s"
