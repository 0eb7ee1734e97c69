#!/bin/bash
# Session 2026-11-30c call AS (issue 46): RULER through the CLI from nothing, then on the disk cache with Python's switch interval at 1 ms.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
export TRITON_CACHE_DIR=/tmp/triton-fresh-$$
timeout $(( 590 - ($(date +%s) - T0) )) python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 --variants default,again-switch > $OUT/ruler.txt 2>&1; tail -c 600 $OUT/ruler.txt
cp /root/ruler/results.json $OUT/ruler_results.json 2>/dev/null
python3 -c "
import json; rs=json.load(open('/root/ruler/results.json'))
for d in rs:
    r=d['run']; print(d['variant'], 'wall', round(r['wall_s'],2), 'engine', round(d['engine_prefill_s'],2), 'ratio', round(d['ratio_whole'],4), round(d['ratio_without_load'],4), 'build_s', r['timing'].get('build_s'))
    print({k: round(v,3) for k,v in r['phases'].items()}); print(r['triton_builds'])
"
echo "total $(( $(date +%s) - T0 )) s"
