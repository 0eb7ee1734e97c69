#!/bin/bash
# Session 2026-11-30 call AG (issue 46): kernels built ahead (GPU test), then RULER through the CLI with Triton's cache empty (as a fresh machine).
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 120 python3 -m pytest -q -m gpu tests/gpu/test_hf_builds_gpu.py -p no:cacheprovider 2>&1 | grep -v -i "warn\|config option\|^ *$\|self._warn\|site-packages\|capture_end" | tail -15 > $OUT/tests.txt; cat $OUT/tests.txt
echo "tests done $(( $(date +%s) - T0 )) s"
export TRITON_CACHE_DIR=/tmp/triton-fresh-$$; rm -rf $TRITON_CACHE_DIR
timeout $(( 585 - ($(date +%s) - T0) )) python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 > $OUT/ruler.txt 2>&1; tail -c 2500 $OUT/ruler.txt
cp /root/ruler/result.json $OUT/ruler_result.json 2>/dev/null
echo "total $(( $(date +%s) - T0 )) s"
