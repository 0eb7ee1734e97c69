#!/bin/bash
# Session 2026-11-29e call Q (issue 46): profile a 64-row step after 4K; batched 8/64 (read rate over 15 reads); long output 64 x 8K; carries SmolLM2 piece A.
set -u; T0=$(date +%s); source .gpu/k/setup.sh
mkdir -p /root/p; cp .gpu/pa/pa /root/p/ && ls -la /root/p
timeout 450 python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --profile $OUT/profile --skip continuous,table,decode,step,attention,bare,prefill,sweep,lengths --step-modes triton,triton-cublas --profile-rows 64 --profile-context 4096 --decode-modes triton --batched-rows 8,64 2>&1 | grep -v -i warn | tee $OUT/bench.txt | grep -v "gemm_choices" | cut -c1-600
echo "total $(( $(date +%s) - T0 )) s"
