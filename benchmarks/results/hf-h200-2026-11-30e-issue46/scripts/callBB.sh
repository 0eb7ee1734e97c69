#!/bin/bash
# Issue 46, prepared 2026-11-30e: the 64-row GEMV loaded by TMA against the engine's kernel and
# torch's matmul at a 7B's four projection shapes (exp_gemv_tma.py; about 200 builds, a few minutes).
# Run in 2026-11-30f: the script it ran is exp_gemv_tma.py at commit 795c495; its later version
# (hf-h200-2026-11-30f-issue46/scripts/, the same with one line per variant) replaces it.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 560 python3 .gpu/g46/exp_gemv_tma.py --rows ${ROWS:-64} 2>&1 | tee $OUT/gemv_tma.jsonl | grep -v '"kind": "check"' | cut -c1-400
echo "total $(( $(date +%s) - T0 )) s"
