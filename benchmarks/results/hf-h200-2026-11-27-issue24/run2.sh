#!/bin/bash
# Issue 24: GPU tests on the branch's final code, and bench_hf at 8K after (final) and before (main).
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
start=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site whl/*.whl || exit 3
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $OUT/card.txt 2>&1
(cd final && PYTHONPATH=src:/tmp/site timeout 200 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tail -25) > $OUT/tests-final.log
echo "tests final done at $(( $(date +%s) - start ))s" >> $OUT/run.log
bench() {
  (cd $1 && PYTHONPATH=src:/tmp/site:benchmarks timeout 120 python3 benchmarks/bench_hf.py --out $OUT/bench-$1.jsonl --lengths 8192 --skip continuous,decode,step,attention,bare,prefill > /dev/null 2>> $OUT/bench-err.log)
  echo "bench $1 rc=$? done at $(( $(date +%s) - start ))s" >> $OUT/run.log
}
bench final
if [ $(( $(date +%s) - start )) -lt 200 ]; then bench before; fi
cat $OUT/run.log; tail -3 $OUT/tests-final.log
