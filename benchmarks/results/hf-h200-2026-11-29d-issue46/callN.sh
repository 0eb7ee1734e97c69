#!/bin/bash
# Session 2026-11-29d call N (issue 46): GEMV timed on the device, attention tuned per launch class; step profile, batch 1, batched 8/64, RULER.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 250 python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --profile $OUT/profile --skip continuous,table,decode,step,attention,bare,prefill,sweep,long --step-modes triton --decode-modes triton --batched-rows 8,64 2>&1 | grep -v -i warn | tee $OUT/bench.txt | cut -c1-1500
echo "bench done $(( $(date +%s) - T0 )) s"
timeout $(( 585 - ($(date +%s) - T0) )) python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 2>&1 | grep -v -i "warn\|Loading\|Writing" | tee $OUT/ruler.txt | grep '"kind": "result"' | cut -c1-3000
cp /root/ruler/result.json $OUT/ruler_result.json 2>/dev/null
echo "total $(( $(date +%s) - T0 )) s"
