#!/bin/bash
# Call 1 (issue 46): decode benchmarks, then the GPU tests; carries SmolLM2 piece A.
set -u; T0=$(date +%s); source .gpu/gpu/setup.sh; cd $G/code
timeout 360 python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --profile $OUT/profile --skip continuous,table,decode,step,attention,bare,prefill 2>&1 | grep -v -i warn | tee $OUT/bench.txt | cut -c1-400
echo "bench done $(( $(date +%s) - T0 )) s"
timeout $(( 560 - ($(date +%s) - T0) )) python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tee $OUT/gputests.txt | tail -25
echo "total $(( $(date +%s) - T0 )) s"
