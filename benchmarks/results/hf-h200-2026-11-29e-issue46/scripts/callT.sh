#!/bin/bash
# Session 2026-11-29e call T (issue 46): RULER through the CLI on this session's code; batched 8/64 at split targets 2048 and 4096.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 330 python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 2>&1 | grep -v -i "warn\|Loading\|Writing" | tee $OUT/ruler.txt | grep '"kind": "result"' | cut -c1-3000
cp /root/ruler/result.json $OUT/ruler_result.json 2>/dev/null
echo "ruler done $(( $(date +%s) - T0 )) s"
timeout $(( 585 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --skip continuous,table,decode,step,attention,bare,prefill,sweep,profile46,lengths,long --decode-modes triton --batched-rows 8,64 --split-targets 4096,2048 2>&1 | grep -v -i warn | tee $OUT/bench.txt | grep -v "gemm_choices" | cut -c1-420
echo "total $(( $(date +%s) - T0 )) s"
