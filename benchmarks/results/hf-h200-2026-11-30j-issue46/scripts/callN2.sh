#!/bin/bash
# Issue 46, eighteenth pass (carry [".gpu/g46"]): N1's failing smoke again after bench_hf.py's
# fresh Triton cache folder is removed at exit (bench_ruler_gpu.py's smoke had left it), with the
# other CUDA smokes that import bench_hf.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 500 python3 -m pytest -q tests/test_benchmarks.py -p no:cacheprovider -W ignore -rs --durations=8 \
  -k "bench_ruler_gpu or bench_hf.py or bench_thinking_hf or profile_prefill" 2>&1 | tail -30 > $OUT/smokes.txt; cat $OUT/smokes.txt
echo "total $(( $(date +%s) - T0 )) s"
