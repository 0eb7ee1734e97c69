#!/bin/bash
# Session 2026-11-29g call AD (issue 46): every GPU test (gate/up with the SiLU product, the 32-row padding, no prefetch); the 64-row step with and without the gated GEMV (graph replay, same process); batched 64/32/8 rows.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 280 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | grep -v -i "warn\|config option\|^ *$\|self._warn\|site-packages\|capture_end" | tail -12 > $OUT/tests.txt; cat $OUT/tests.txt
echo "tests done $(( $(date +%s) - T0 )) s"
timeout $(( 575 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --profile $OUT/profile --skip continuous,table,decode,step,attention,bare,prefill,sweep,long,ops46,lengths --step-modes triton,triton-nogated --profile-rows 64 --profile-context 4096 --batched-rows 64,32,8 2>&1 | grep -v -i warn > $OUT/bench.txt; grep -v gemm_choices $OUT/bench.txt | cut -c1-900
echo "total $(( $(date +%s) - T0 )) s"
