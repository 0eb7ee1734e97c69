#!/bin/bash
# Issue 24 item 5: GPU tests and a short bench_hf comparison, before (main) and after (wt-hf).
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
start=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site whl/*.whl || exit 3
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $OUT/card.txt 2>&1
python3 -c "import torch, transformers, triton; print(torch.__version__, transformers.__version__, triton.__version__)" >> $OUT/card.txt 2>&1
for tree in before after; do
  (cd $tree && PYTHONPATH=src:/tmp/site timeout 200 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tail -25) > $OUT/tests-$tree.log
  echo "tests $tree done at $(( $(date +%s) - start ))s" >> $OUT/run.log
done
bench() {
  (cd $1 && PYTHONPATH=src:/tmp/site:benchmarks timeout 150 python3 benchmarks/bench_hf.py --out $OUT/bench-$1.jsonl --lengths 8192 --skip continuous,decode,step,attention,bare,prefill > /dev/null 2>> $OUT/bench-err.log)
  echo "bench $1 rc=$? done at $(( $(date +%s) - start ))s" >> $OUT/run.log
}
bench after; bench before
if [ $(( $(date +%s) - start )) -lt 330 ]; then bench after; bench before; fi
cat $OUT/run.log
