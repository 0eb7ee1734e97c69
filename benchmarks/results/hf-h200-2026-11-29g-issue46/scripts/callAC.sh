#!/bin/bash
# Session 2026-11-29g call AC (issue 46): decode-ops GPU tests on the L2 prefetch; the 64/8-row step with prefetch on/off/GEMV-only (graph replay, same process); batched 64/32 rows with and without prefetch (splits by each row's keys: the new default).
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 150 python3 -m pytest -q -m gpu tests/gpu/test_decode_ops_gpu.py -p no:cacheprovider 2>&1 | grep -v -i "warn\|config option\|^ *$\|self._warn" | tail -8 | tee $OUT/tests.txt
echo "tests done $(( $(date +%s) - T0 )) s"
timeout $(( 590 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --profile $OUT/profile --skip continuous,table,decode,step,attention,bare,prefill,sweep,long,ops46,lengths --step-modes triton,triton-noprefetch,triton-nokvprefetch --profile-rows 64,8 --profile-context 4096 --batched-rows 64,32 --batched-modes triton,triton-noprefetch 2>&1 | grep -v -i warn | tee $OUT/bench.txt | grep -v "gemm_choices" | cut -c1-700
echo "total $(( $(date +%s) - T0 )) s"
