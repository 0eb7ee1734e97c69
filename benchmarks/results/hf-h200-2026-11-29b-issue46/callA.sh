#!/bin/bash
# Session 2026-11-29b call A (issue 46): RULER end to end on main (capture without a device sync, 3850b57 onward), decode at batch 1 and batched on this machine, GPU tests.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 280 python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 2>&1 | grep -v -i "warn\|Loading\|Writing" | tee $OUT/ruler.txt | grep '"kind": "result"' | cut -c1-3000
cp /root/ruler/result.json $OUT/ruler_result.json 2>/dev/null; rm -rf /root/ruler
echo "ruler done $(( $(date +%s) - T0 )) s"
timeout 200 python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --skip continuous,table,decode,step,attention,bare,prefill,sweep,profile46,long --decode-modes triton-cublas --batched-rows 8,64 2>&1 | grep -v -i warn | tee $OUT/bench.txt | grep -v gemm_choices | cut -c1-600
echo "bench done $(( $(date +%s) - T0 )) s"
timeout $(( 590 - ($(date +%s) - T0) )) python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tee $OUT/gputests.txt | tail -4
echo "total $(( $(date +%s) - T0 )) s"
