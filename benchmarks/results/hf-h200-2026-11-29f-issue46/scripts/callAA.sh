#!/bin/bash
# Session 2026-11-29f call AA (issue 46): splits by each row's keys; attention GPU tests, then batched 64 rows A/B (answers up to 4K).
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 60 python3 -m pytest -q -m gpu tests/gpu/test_decode_ops_gpu.py -k "reads_each_row or same_with_triton_and_torch" -p no:cacheprovider 2>&1 | grep -v -i "warn\|config option\|^ *$\|self._warn" | tail -6 | tee $OUT/tests.txt
echo "tests done $(( $(date +%s) - T0 )) s"
timeout $(( 205 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --skip continuous,table,decode,step,attention,bare,prefill,sweep,long,ops46,lengths,profile46 --batched-rows 64 --batched-longest 4096 --balanced-splits 1,0 2>&1 | grep -v -i warn | tee $OUT/bench.txt | grep -v "gemm_choices" | cut -c1-700
echo "total $(( $(date +%s) - T0 )) s"
