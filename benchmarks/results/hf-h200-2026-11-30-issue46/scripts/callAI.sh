#!/bin/bash
# Session 2026-11-30 call AI (issue 46): RULER through the CLI as a fresh machine, each prefill's plan and join time recorded.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
export TRITON_CACHE_DIR=/tmp/triton-fresh-$$
timeout $(( 590 - ($(date +%s) - T0) )) python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 > $OUT/ruler.txt 2>&1; tail -c 1500 $OUT/ruler.txt
cp /root/ruler/result.json $OUT/ruler_result.json 2>/dev/null
python3 -c "
import json; d=json.load(open('/root/ruler/result.json'))
for u in d['run']['units']: print(u)
" 
echo "total $(( $(date +%s) - T0 )) s"
