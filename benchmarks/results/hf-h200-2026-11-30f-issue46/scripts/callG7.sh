#!/bin/bash
# Issue 46, prepared 2026-11-30f for the next card: Gemma 3 270M's whole 8K-32K grid (RULER's 13
# tasks + LongCtx's 3 depths) in float32 against transformers' SDPA `generate` AND its eager one
# (--baseline eager: summary.json's `engine_baseline_rate`). In 2026-11-30f, SDPA `generate` on the
# card left the engine on 5 of 48 prompts, and on the 4 re-run with eager attention (call G6)
# transformers' eager `generate` equalled the engine's 128 tokens every time.
# Run after G0-G4 (make_gemma_carries.sh's calls), on one warm machine:
#   LENGTHS=8k  carry [".gpu/gm5"]: bash benchmarks/results/hf-h200-2026-11-30f-issue46/scripts/callG7.sh
#   LENGTHS=16k carry []:           the same command (the model is already in /root/gemma3)
#   LENGTHS=32k carry []:           the same command
# DTYPE=bfloat16 (added 2026-11-30g; not yet run) runs the same grid in bf16.
# Only the comparison's rows come back ($OUT/<length>/agreement.jsonl, summary.json): the runs'
# stores stay in /root (too many files for the way back).
set -u; T0=$(date +%s); R=$PWD
export PYTHONPATH=/root/site:/root/g46/site:$R/src:$R PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
if [ ! -f /root/gemma3/config.json ]; then
  cp .gpu/gm5/p5 /root/gm/ && cd /root/gm && cat p1 p2 p3 p4 p5 > gemma-3-270m-q4_k_m.gguf && sha256sum gemma-3-270m-q4_k_m.gguf | tee $OUT/sha.txt; cd $R
  python3 .gpu/gm5/convert_gemma_dev.py /root/gm/gemma-3-270m-q4_k_m.gguf /root/gemma3 2>&1 | grep -v "Warning\|warn\|it/s" | tail -3 | tee $OUT/convert.txt
  # transformers 5.17 converts Gemma's tokenizer into one that splits English into characters
  cp /root/gtok/tokenizer.json /root/gtok/tokenizer_config.json /root/gemma3/
fi
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"; echo "code commit $(cat /root/g46/COMMIT)"; date -u; } | tee $OUT/card.txt
for L in ${LENGTHS:-8k}; do
  left=$(( ${BUDGET:-570} - ($(date +%s) - T0) )); [ $left -lt 30 ] && { echo "no time for $L"; break; }
  timeout $left python3 benchmarks/bench_hf_agreement.py --model /root/gemma3 --out /root/out7/${DTYPE:-float32}-$L --lengths $L --dtype ${DTYPE:-float32} --prompt-mode completion --baseline eager > $OUT/agreement-$L.txt 2>&1
  echo "$L rc $? at $(( $(date +%s) - T0 )) s"; tail -1 $OUT/agreement-$L.txt | cut -c1-700
  mkdir -p $OUT/$L && cp /root/out7/${DTYPE:-float32}-$L/agreement.jsonl /root/out7/${DTYPE:-float32}-$L/summary.json $OUT/$L/ 2>/dev/null
done
echo "total $(( $(date +%s) - T0 )) s"
