#!/bin/bash
# Session 2026-11-29c call J (issue 46, da7a648): RULER end to end again (the same code as call I, another machine).
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 300 python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 2>&1 | grep -v -i "warn\|Loading\|Writing" | tee $OUT/ruler.txt | grep '"kind": "result"' | cut -c1-3000
cp /root/ruler/result.json $OUT/ruler_result.json 2>/dev/null; echo "total $(( $(date +%s) - T0 )) s"
