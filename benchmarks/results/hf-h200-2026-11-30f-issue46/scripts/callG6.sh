#!/bin/bash
# Issue 46, 2026-11-30f, after G0-G4 (2026-11-30e's scripts): Gemma 3 270M's GGUF put together,
# converted (float32), then only the prompts where transformers' `generate` differed from the
# engine on the card in 2026-11-30f's G5 (8K: niah_single_2, niah_single_3, niah_multiquery;
# 16K: niah_single_3), now also generated with transformers' eager attention (--baseline eager):
# does transformers agree with itself there? (On the VM's CPU, 5.17 and 5.24 agree with the engine.)
set -u; T0=$(date +%s); R=$PWD
cp .gpu/gm5/p5 /root/gm/ && cd /root/gm && cat p1 p2 p3 p4 p5 > gemma-3-270m-q4_k_m.gguf && sha256sum gemma-3-270m-q4_k_m.gguf | tee $OUT/sha.txt; cd $R
export PYTHONPATH=/root/site:/root/g46/site:$R/src:$R PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; python3 -c "
import torch, transformers
print('torch', torch.__version__, 'transformers', transformers.__version__, 'matmul tf32', torch.backends.cuda.matmul.allow_tf32, 'cudnn tf32', torch.backends.cudnn.allow_tf32)"; echo "code commit $(cat /root/g46/COMMIT)"; date -u; } | tee $OUT/card.txt
python3 .gpu/gm5/convert_gemma_dev.py /root/gm/gemma-3-270m-q4_k_m.gguf /root/gemma3 2>&1 | grep -v "Warning\|warn\|it/s" | tail -3 | tee $OUT/convert.txt
[ -d /root/gtok ] && cp /root/gtok/tokenizer.json /root/gtok/tokenizer_config.json /root/gemma3/
for spec in "8k niah_single_2,niah_single_3,niah_multiquery" "16k niah_single_3"; do
  set -- $spec; L=$1; TASKS=$2
  left=$(( ${BUDGET:-560} - ($(date +%s) - T0) )); [ $left -lt 20 ] && { echo "no time for $L"; break; }
  timeout $left python3 benchmarks/bench_hf_agreement.py --model /root/gemma3 --out /root/out6/$L --lengths $L --dtype float32 --prompt-mode completion --tasks $TASKS --skip-longctx --baseline eager > $OUT/agreement-$L.txt 2>&1
  echo "$L rc $? at $(( $(date +%s) - T0 )) s"; tail -1 $OUT/agreement-$L.txt | cut -c1-900
  mkdir -p $OUT/$L && cp /root/out6/$L/agreement.jsonl /root/out6/$L/summary.json $OUT/$L/ 2>/dev/null
done
echo "total $(( $(date +%s) - T0 )) s"
