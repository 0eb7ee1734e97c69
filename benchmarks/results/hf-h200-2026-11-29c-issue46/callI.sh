#!/bin/bash
# Session 2026-11-29c call I (issue 46, 3c3b550): a joining request takes a parked row's place; RULER end to end, GPU tests.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 320 python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 2>&1 | grep -v -i "warn\|Loading\|Writing" | tee $OUT/ruler.txt | grep '"kind": "result"' | cut -c1-3000
cp /root/ruler/result.json $OUT/ruler_result.json 2>/dev/null; rm -rf /root/ruler
echo "ruler done $(( $(date +%s) - T0 )) s"
timeout 150 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tee $OUT/gputests.txt | tail -4
echo "tests done $(( $(date +%s) - T0 )) s"
echo "total $(( $(date +%s) - T0 )) s"
