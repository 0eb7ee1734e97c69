#!/bin/bash
# Session 2026-11-30b call AN (issue 46): every GPU test on HEAD (rotary kernel built once for every chunk length).
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
export TRITON_CACHE_DIR=/tmp/triton-tests-$$
timeout 240 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider -W ignore 2>&1 | grep -v "config option\|^ *$\|site-packages\|capture_end" | tail -15 > $OUT/tests.txt; cat $OUT/tests.txt
echo "total $(( $(date +%s) - T0 )) s"
