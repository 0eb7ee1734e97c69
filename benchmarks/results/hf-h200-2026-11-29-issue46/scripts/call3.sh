#!/bin/bash
# Call 3 (issue 46): decode after the merge-kernel change, batched 64 rows, GPU tests.
set -u; T0=$(date +%s); source .gpu/gpu/setup.sh; cd $G/code
timeout 190 python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --profile $OUT/profile --batched-rows 64 --skip continuous,table,decode,step,attention,bare,prefill 2>&1 | grep -v -i warn | tee $OUT/bench.txt | cut -c1-400
echo "bench done $(( $(date +%s) - T0 )) s"
timeout $(( 290 - ($(date +%s) - T0) )) python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tee $OUT/gputests.txt | tail -6
echo "total $(( $(date +%s) - T0 )) s"
