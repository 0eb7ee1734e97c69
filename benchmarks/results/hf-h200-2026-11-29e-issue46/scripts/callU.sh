#!/bin/bash
# Session 2026-11-29e call U (issue 46): RULER through the CLI on a fresh machine (cold Triton cache) with the split/merge stages built once per configuration; then the decode kernels' GPU tests in what time is left.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
ls ~/.triton/cache 2>/dev/null | wc -l
timeout 320 python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 2>&1 | grep -v -i "warn\|Loading\|Writing" | tee $OUT/ruler.txt | grep '"kind": "result"' | cut -c1-3500
cp /root/ruler/result.json $OUT/ruler_result.json 2>/dev/null
echo "ruler done $(( $(date +%s) - T0 )) s"
timeout $(( 395 - ($(date +%s) - T0) )) python3 -m pytest -q -m gpu tests/gpu/test_decode_ops_gpu.py -p no:cacheprovider 2>&1 | tee $OUT/gputests.txt | tail -3
echo "total $(( $(date +%s) - T0 )) s"
