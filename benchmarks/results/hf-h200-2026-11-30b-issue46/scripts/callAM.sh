#!/bin/bash
# Session 2026-11-30b call AM (issue 46): every GPU test on HEAD, then RULER through the CLI from nothing once more (the fresh ratio's spread).
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
export TRITON_CACHE_DIR=/tmp/triton-tests-$$
timeout 250 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | grep -v -i "warn\|config option\|^ *$\|self._warn\|site-packages\|capture_end" | tail -15 > $OUT/tests.txt; cat $OUT/tests.txt
echo "tests done $(( $(date +%s) - T0 )) s"
export TRITON_CACHE_DIR=/tmp/triton-fresh-$$
timeout $(( 590 - ($(date +%s) - T0) )) python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 > $OUT/ruler.txt 2>&1
cp /root/ruler/results.json $OUT/ruler_results.json 2>/dev/null
python3 -c "
import json; rs=json.load(open('/root/ruler/results.json'))
for d in rs:
    r=d['run']; print(d['variant'], 'wall', round(r['wall_s'],2), 'engine', round(d['engine_prefill_s'],2), 'ratio', round(d['ratio_whole'],4), round(d['ratio_without_load'],4))
    print({k: round(v,3) for k,v in r['phases'].items()}); print(r['triton_builds']); print('gemv plans', r.get('gemv_plans'))
"
echo "total $(( $(date +%s) - T0 )) s"
