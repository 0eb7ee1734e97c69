#!/bin/bash
# Issue 46, prepared 2026-11-30f: torch's SDPA at key lengths 1 past a multiple of 32 on Gemma 3
# 270M's real weights, and the engine's attention beside it (exp_kv_residue.py), in float32 and
# bfloat16. Needs /root/gemma3 (made by callG7.sh's first call); carries nothing.
set -u; T0=$(date +%s); R=$PWD
export PYTHONPATH=/root/site:/root/g46/site:$R/src:$R PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
for D in float32 bfloat16; do
  timeout 200 python3 benchmarks/results/hf-h200-2026-11-30f-issue46/scripts/exp_kv_residue.py --model /root/gemma3 --dtype $D --lengths ${LENGTHS:-7488,7489,7490,8064,8065,8066,16257,16258} 2>&1 | grep -v Warn | tee -a $OUT/kv_residue.jsonl
done
echo "total $(( $(date +%s) - T0 )) s"
