#!/bin/bash
# Session 2026-11-29g call AE (issue 46): RULER through the CLI first on a fresh machine (Triton's cache empty).
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
ls ~/.triton/cache 2>/dev/null | wc -l | sed 's/^/triton cache entries before: /' | tee $OUT/cache.txt
timeout 330 python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 2>&1 | grep -v -i "warn\|Loading\|Writing" | tee $OUT/ruler.txt | grep '"kind": "result"' | cut -c1-3000
cp /root/ruler/result.json $OUT/ruler_result.json 2>/dev/null
echo "total $(( $(date +%s) - T0 )) s"
