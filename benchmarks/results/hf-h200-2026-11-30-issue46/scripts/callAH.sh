#!/bin/bash
# Session 2026-11-30 call AH (issue 46): every GPU test (tunings build at once), then RULER through the CLI with Triton's cache empty and the setup's kernels dropped (as a fresh machine).
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
export TRITON_CACHE_DIR=/tmp/triton-tests-$$
timeout 250 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | grep -v -i "warn\|config option\|^ *$\|self._warn\|site-packages\|capture_end" | tail -15 > $OUT/tests.txt; cat $OUT/tests.txt
echo "tests done $(( $(date +%s) - T0 )) s"
export TRITON_CACHE_DIR=/tmp/triton-fresh-$$
timeout $(( 590 - ($(date +%s) - T0) )) python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 > $OUT/ruler.txt 2>&1; tail -c 1800 $OUT/ruler.txt
cp /root/ruler/result.json $OUT/ruler_result.json 2>/dev/null
echo "total $(( $(date +%s) - T0 )) s"
