#!/bin/bash
# Session 2026-11-30d call AV (issue 46): every GPU test on HEAD (the load's build ahead of the
# run's Triton kernels; the split stage's single untuned configuration again), then RULER through
# the CLI from nothing (VARIANTS, default: `default`), with each Triton build's kernel, thread and time.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
if [ "${TESTS:-1}" = 1 ]; then
export TRITON_CACHE_DIR=/tmp/triton-tests-$$
timeout ${TESTS_S:-330} python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider -W ignore 2>&1 | grep -v "config option\|^ *$\|site-packages\|capture_end" | tail -25 > $OUT/tests.txt; cat $OUT/tests.txt
fi
export TRITON_CACHE_DIR=/tmp/triton-fresh-$$
rm -rf /root/ruler  # a warm machine keeps the last call's run, which the CLI would resume
timeout $(( 590 - ($(date +%s) - T0) )) python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 --variants ${VARIANTS:-default} > $OUT/ruler.txt 2>&1; tail -c 600 $OUT/ruler.txt
cp /root/ruler/results.json $OUT/ruler_results.json 2>/dev/null
python3 -c "
import json; rs=json.load(open('/root/ruler/results.json'))
for d in rs:
    r=d['run']; print(d['variant'], 'wall', round(r['wall_s'],2), 'engine', round(d['engine_prefill_s'],2), 'ratio', round(d['ratio_whole'],4), round(d['ratio_without_load'],4), 'first', r['first_request_s'])
    print({k: round(v,3) for k,v in r['phases'].items()}); print(r['built_ahead'])
    b=dict(r['triton_builds']); ev=b.pop('events', []); print(b)
    for e in ev: print('  build', e)
"
echo "total $(( $(date +%s) - T0 )) s"
