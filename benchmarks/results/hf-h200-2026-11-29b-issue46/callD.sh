#!/bin/bash
# Session 2026-11-29b call D (issue 46, 7f27dea): the GPU tests on the final engine code (context_overflow, chat overhead).
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 170 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tee $OUT/gputests.txt | tail -6
echo "total $(( $(date +%s) - T0 )) s"
