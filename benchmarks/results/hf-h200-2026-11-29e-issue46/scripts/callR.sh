#!/bin/bash
# Session 2026-11-29e call R (issue 46.3): SmolLM2 (piece B here, A from call Q); agreement bf16 4K-8K with transformers' eager baseline, then the engine's exact path.
set -u; T0=$(date +%s); source .gpu/k/setup.sh
mkdir -p /root/gg /root/p; cp .gpu/pb/pb /root/p/; ls -la /root/p
[ -f /root/gg/smollm2.gguf ] || { cat /root/p/pa /root/p/pb > /root/smol.gguf.gz; gunzip -c /root/smol.gguf.gz > /root/gg/smollm2.gguf; }
python3 $G/convert.py /root/gg/smollm2.gguf /root/models/smollm2 $G/tok 2>&1 | grep -v -i "warn\|it/s" | tail -4 || exit 1
echo "converted $(( $(date +%s) - T0 )) s"
A=/root/agr; rm -rf $A
timeout 280 python3 benchmarks/bench_hf_agreement.py --model /root/models/smollm2 --out $A/def --lengths 4k,8k --baseline eager 2>&1 | grep -v -i warn | tail -1 | cut -c1-2500
cp $A/def/agreement.jsonl $OUT/agreement-4k-8k.jsonl; cp $A/def/summary.json $OUT/summary-4k-8k.json
echo "default done $(( $(date +%s) - T0 )) s"
timeout $(( 575 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf_agreement.py --model /root/models/smollm2 --out $A/exact --lengths 4k,8k --exact-path 2>&1 | grep -v -i warn | tail -1 | cut -c1-2500
cp $A/exact/agreement.jsonl $OUT/agreement-exact-4k-8k.jsonl; cp $A/exact/summary.json $OUT/summary-exact-4k-8k.json
echo "total $(( $(date +%s) - T0 )) s"
