#!/bin/bash
# Issue 46, 2026-11-30g, call KS: torch's memory-efficient SDPA per layout and length, one variant
# per process (exp_sdpa_residue.py), then the engine's masked-attention GPU test and, where
# /root/gemma3 is there (callG7.sh), the last logits on Gemma's real weights (callKR.sh).
set -u; T0=$(date +%s); R=$PWD
export PYTHONPATH=$R/src:$R PYTHONUNBUFFERED=1
PAIRS=${PAIRS:-545x545,546x546,544x545,545x546,546x545,32x545,1x545,7489x7489,7488x7489,7489x7490,8065x8065}
for V in ${VARIANTS:-efficient_stride0 efficient_contiguous engine efficient_pad_kv efficient_pad_q efficient_stride0_mask_heads}; do
  timeout 120 python3 benchmarks/results/hf-h200-2026-11-30g-issue46/scripts/exp_sdpa_residue.py $PAIRS $V 2>&1 | grep '^{' | tee -a $OUT/sdpa_residue.jsonl | cut -c1-200
done
echo "variants done at $(( $(date +%s) - T0 )) s"
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_masked_attention_gpu.py -p no:cacheprovider 2>&1 | tail -3
[ -f /root/gemma3/config.json ] && bash benchmarks/results/hf-h200-2026-11-30f-issue46/scripts/callKR.sh 2>&1 | grep '^{' | cut -c1-220
echo "total $(( $(date +%s) - T0 )) s"
