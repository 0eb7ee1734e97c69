#!/bin/bash
# Issue 46, prepared 2026-11-30f: the TMA-loaded 64-row GEMV at the shapes holding 87% of a 7B
# layer's weight bytes (gate_up, down), plain variants only (BC0: a warp-specialized one never
# returned). Carry [".gpu/g46"] (its wheels and setup2.sh; the script runs from the tree):
#   bash benchmarks/results/hf-h200-2026-11-30f-issue46/scripts/callBD.sh
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout ${LIMIT:-300} python3 benchmarks/results/hf-h200-2026-11-30f-issue46/scripts/exp_gemv_tma.py --rows 64 --shapes ${SHAPES:-gate_up,down} --budget ${BUDGET:-240} --plain-only 2>&1 | tee $OUT/gemv_tma.jsonl | grep -v '"kind": "check"' | cut -c1-300
echo "total $(( $(date +%s) - T0 )) s"
