#!/bin/bash
# Issue 46, prepared 2026-11-30g for the next card: the decode attention's split stage at the
# batched shapes (64 and 32 rows, Qwen2.5-7B's attention) against the read rate, the engine's five
# configurations and a wider sweep, per target count of programs (exp_decode_attention.py).
# Carry [".gpu/g46"] (make_gpu_folder.sh in hf-h200-2026-11-30c-issue46/scripts), about 4 minutes:
#   bash benchmarks/results/hf-h200-2026-11-30g-issue46/scripts/callKA.sh
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout ${LIMIT:-500} python3 benchmarks/results/hf-h200-2026-11-30g-issue46/scripts/exp_decode_attention.py \
  --rows ${ROWS:-64,32} --lengths ${LENGTHS:-2048-8192,4096} --targets ${TARGETS:-1024,2048,4096} \
  --budget ${BUDGET:-120} 2>&1 | tee $OUT/decode_attention.jsonl | cut -c1-700
echo "total $(( $(date +%s) - T0 )) s"
