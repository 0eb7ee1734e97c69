#!/bin/bash
# Issue 46, 2026-11-30e, call G5 of 5: the last part, the GGUF put together and checked, converted
# to a float32 transformers folder, then the engine's greedy answers against transformers'
# `generate` in float32 on RULER's 13 tasks + LongCtx's 3 depths at 8K, 16K, 32K (4K ran on the
# VM's CPU: 16 of 16), one length per command so that a cut-off call keeps the lengths done.
set -u; T0=$(date +%s); R=$PWD
cp .gpu/gm5/p5 /root/gm/ && cd /root/gm && cat p1 p2 p3 p4 p5 > gemma-3-270m-q4_k_m.gguf && sha256sum gemma-3-270m-q4_k_m.gguf | tee $OUT/sha.txt; cd $R
export PYTHONPATH=/root/site:/root/g46/site:$R/src:$R PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"; echo "code commit $(cat /root/g46/COMMIT)"; date -u; } | tee $OUT/card.txt
python3 .gpu/gm5/convert_gemma_dev.py /root/gm/gemma-3-270m-q4_k_m.gguf /root/gemma3 2>&1 | grep -v "Warning\|warn" | tail -5 | tee $OUT/convert.txt
# transformers 5.17 converts Gemma's tokenizer into one that splits English into characters (the
# engine refuses it): the one converted on the VM by 5.24 (callG0.sh) replaces it.
[ -d /root/gtok ] && cp /root/gtok/tokenizer.json /root/gtok/tokenizer_config.json /root/gemma3/
for L in ${LENGTHS:-8k 16k 32k}; do
  left=$(( ${BUDGET:-560} - ($(date +%s) - T0) )); [ $left -lt 30 ] && { echo "no time for $L"; break; }
  timeout $left python3 benchmarks/bench_hf_agreement.py --model /root/gemma3 --out $OUT/fp32-$L --lengths $L --dtype float32 --prompt-mode completion > $OUT/agreement-$L.txt 2>&1
  echo "$L rc $? at $(( $(date +%s) - T0 )) s"; tail -3 $OUT/agreement-$L.txt
done
echo "total $(( $(date +%s) - T0 )) s"
