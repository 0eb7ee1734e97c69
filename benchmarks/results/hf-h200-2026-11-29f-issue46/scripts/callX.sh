#!/bin/bash
# Session 2026-11-29f call X (issue 46): fused merge, norm warps, GEMV tiles; decode-op tests, profile A/B, batched, batch 1.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_decode_ops_gpu.py -p no:cacheprovider 2>&1 | grep -v -i "warn\|config option\|^ *$\|self._warn" | tail -15 | tee $OUT/tests.txt
echo "tests done $(( $(date +%s) - T0 )) s"
timeout $(( 585 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --profile $OUT/profile --skip continuous,table,decode,step,attention,bare,prefill,sweep,long,ops46 --step-modes triton,triton-unfused --profile-rows 8,64 --profile-context 4096 --batched-rows 8,64 --decode-modes triton 2>&1 | grep -v -i warn | tee $OUT/bench.txt | grep -v "gemm_choices" | cut -c1-600
echo "total $(( $(date +%s) - T0 )) s"
