#!/bin/bash
# Session 2026-11-29c call G (issue 46, 244641e): parked rows, unwarmed recapture; RULER end to end, decode at batch 1, GPU tests.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 320 python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 2>&1 | grep -v -i "warn\|Loading\|Writing" | tee $OUT/ruler.txt | grep '"kind": "result"' | cut -c1-3000
cp /root/ruler/result.json $OUT/ruler_result.json 2>/dev/null; rm -rf /root/ruler
echo "ruler done $(( $(date +%s) - T0 )) s"
timeout 150 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tee $OUT/gputests.txt | tail -4
echo "tests done $(( $(date +%s) - T0 )) s"
timeout $(( 585 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --skip continuous,table,decode,step,attention,bare,prefill,sweep,profile46,long,batched --decode-modes triton-cublas 2>&1 | grep -v -i warn | tee $OUT/bench.txt | grep -v gemm_choices | cut -c1-400
echo "total $(( $(date +%s) - T0 )) s"
