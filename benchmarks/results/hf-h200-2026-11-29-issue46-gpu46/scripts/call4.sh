#!/bin/bash
# Call 4 (issue 46, gpu46): capture without a device sync, skinny GEMM off by default: GPU tests, RULER end to end, batch 1 at 8K-128K and batched 64 again.
set -u; T0=$(date +%s); source .gpu/g46/setup.sh; cd $G/code
timeout 170 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tee $OUT/gputests.txt | tail -3
echo "tests done $(( $(date +%s) - T0 )) s"
timeout 300 python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 2>&1 | grep -v -i "warn\|Loading\|Writing" | tee $OUT/ruler.txt | grep '"kind": "result"' | cut -c1-2500
cp /root/ruler/result.json $OUT/ruler_result.json 2>/dev/null; rm -rf /root/ruler
echo "ruler done $(( $(date +%s) - T0 )) s"
timeout $(( 588 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --skip continuous,table,decode,step,attention,bare,prefill,sweep,profile46,long --decode-modes triton-cublas --batched-rows 64 2>&1 | grep -v -i warn | tee $OUT/bench.txt | grep -v gemm_choices | cut -c1-600
echo "total $(( $(date +%s) - T0 )) s"
