#!/bin/bash
# Issue 46, 2026-11-30f: the 64-row GEMV loaded by TMA (exp_gemv_tma.py, now one line per variant
# and a time budget; 2026-11-30e's callBB printed nothing after the read rate in 560 s), at the two
# shapes furthest from the read rate (o_proj 0.68, qkv 0.63 in call W), plain variants first.
# (BC0 ran a copy of the script carried as .gpu/g46/exp_gemv_tma_f.py, before `--plain-only`.)
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout ${LIMIT:-400} python3 benchmarks/results/hf-h200-2026-11-30f-issue46/scripts/exp_gemv_tma.py --rows 64 --shapes ${SHAPES:-o_proj,qkv} --budget ${BUDGET:-300} 2>&1 | tee $OUT/gemv_tma.jsonl | grep -v '"kind": "check"' | cut -c1-300
echo "total $(( $(date +%s) - T0 )) s"
