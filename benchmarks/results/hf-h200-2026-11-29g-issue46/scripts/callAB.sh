#!/bin/bash
# Session 2026-11-29g call AB (issue 46): every GPU test on HEAD, then batched 32/64 rows with splits cut by each row's keys on and off.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 230 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | grep -v -i "warn\|config option\|^ *$\|self._warn" | tail -8 | tee $OUT/tests.txt
echo "tests done $(( $(date +%s) - T0 )) s"
timeout $(( 590 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --skip continuous,table,decode,step,attention,bare,prefill,sweep,long,ops46,lengths,profile46 --batched-rows 64,32 --balanced-splits 1,0 2>&1 | grep -v -i warn | tee $OUT/bench.txt | grep -v "gemm_choices" | cut -c1-600
echo "total $(( $(date +%s) - T0 )) s"
