#!/bin/bash
# Next session's first call (issue 46), prepared 2026-11-30c: every GPU test on HEAD (the staged
# weight move, the split stage's per-class configuration, a class-8 attention shape), then the
# staged move against Module.to (bench_hf's `move` part alone). RULER next: RUN=ruler bash .gpu/g46/callAO.sh
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
export TRITON_CACHE_DIR=/tmp/triton-tests-$$
timeout 330 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider -W ignore 2>&1 | grep -v "config option\|^ *$\|site-packages\|capture_end" | tail -25 > $OUT/tests.txt; cat $OUT/tests.txt
timeout $(( 590 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/move.jsonl \
  --skip continuous,table,decode,step,attention,bare,prefill,lengths,batched,profile46,sweep,long,ops46,first \
  > $OUT/move.txt 2>&1; grep -v "Loading\|Writing" $OUT/move.txt | tail -12
echo "total $(( $(date +%s) - T0 )) s"
