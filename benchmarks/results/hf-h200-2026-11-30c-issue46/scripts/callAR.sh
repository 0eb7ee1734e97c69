#!/bin/bash
# Session 2026-11-30c call AR (issue 46): a saved 7B moved to the GPU: model.to against threaded and pinned-staging copies.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
nproc; free -g | head -2
timeout 400 python3 .gpu/g46/exp_load2.py $OUT/move.jsonl > $OUT/move.txt 2>&1; grep -v Loading $OUT/move.txt | tail -c 4000
echo "total $(( $(date +%s) - T0 )) s"
