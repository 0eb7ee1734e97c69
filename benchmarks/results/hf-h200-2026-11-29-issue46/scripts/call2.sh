#!/bin/bash
# Call 2 (issue 46.3): SmolLM2-135M-Instruct (piece B here, A from call 1), dequantized on the card;
# the engine's greedy answers against transformers' generate on RULER + LongCtx.
set -u; T0=$(date +%s); source .gpu/gpu/setup.sh; cd $G/code
mkdir -p /root/gg; [ -f /root/gg/smollm2.gguf ] || [ -f /root/p/pb ] || { echo "PIECES MISSING"; exit 1; }
[ -f /root/gg/smollm2.gguf ] || { cat /root/p/pa /root/p/pb > /root/smol.gguf.gz; gunzip -c /root/smol.gguf.gz > /root/gg/smollm2.gguf; }
mkdir -p /root/gg
python3 $G/convert.py /root/gg/smollm2.gguf /root/models/smollm2 $G/tok 2>&1 | grep -v -i "warn\|it/s" | tail -4 || exit 1
echo "converted $(( $(date +%s) - T0 )) s"
A=/root/agr; rm -rf $A
timeout 250 python3 benchmarks/bench_hf_agreement.py --model /root/models/smollm2 --out $A/ctx --lengths 4k,8k 2>&1 | grep -v -i warn | tail -4 | cut -c1-1500
cp $A/ctx/agreement.jsonl $OUT/agreement-4k-8k.jsonl; cp $A/ctx/summary.json $OUT/summary-4k-8k.json
echo "4k-8k done $(( $(date +%s) - T0 )) s"
timeout $(( 570 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf_agreement.py --model /root/models/smollm2 --out $A/past --lengths 16k,32k --context-length 32768 2>&1 | grep -v -i warn | tail -3 | cut -c1-1500
cp $A/past/agreement.jsonl $OUT/agreement-16k-32k.jsonl; cp $A/past/summary.json $OUT/summary-16k-32k.json
echo "total $(( $(date +%s) - T0 )) s"
