#!/bin/bash
# Session 2026-11-30 call AJ (issue 46): a first batch from nothing, tunings' variants built at once (8 threads) or one by one (0), alternately, twice.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
export TRITON_CACHE_DIR=/tmp/triton-aj-$$
timeout $(( 300 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --skip continuous,table,decode,step,attention,bare,prefill,lengths,batched,profile46,sweep,long,ops46 --first-batch-threads 0,8 2>&1 | grep -v -i warn > $OUT/bench.txt; grep -v "gemm_choices\|attention_choices" $OUT/bench.txt | cut -c1-400
echo "total $(( $(date +%s) - T0 )) s"
