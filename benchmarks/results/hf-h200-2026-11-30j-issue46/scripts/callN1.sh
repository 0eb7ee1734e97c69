#!/bin/bash
# Issue 46, eighteenth pass (carry [".gpu/g46"]): every GPU test on HEAD, then the CUDA scripts'
# smokes through tests/test_benchmarks.py, which now also checks that each leaves its temporary
# directory empty (bench_ruler_gpu.py's smoke scratch is removed at exit since 654d9e9).
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
export TRITON_CACHE_DIR=/tmp/triton-tests-$$
timeout 300 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider -W ignore 2>&1 | grep -v "config option\|^ *$\|site-packages\|capture_end" | tail -25 > $OUT/tests.txt; cat $OUT/tests.txt
left=$(( 590 - ($(date +%s) - T0) ))
timeout $left python3 -m pytest -q tests/test_benchmarks.py -p no:cacheprovider -W ignore -rs --durations=8 \
  -k "bench_ruler_gpu or bench_thinking_hf or bench_hf.py or profile_prefill" 2>&1 | tail -30 > $OUT/smokes.txt; cat $OUT/smokes.txt
echo "total $(( $(date +%s) - T0 )) s"
