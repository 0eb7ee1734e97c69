#!/bin/bash
# Session 2026-11-29f call W (issue 46): the batched step's small kernels swept alone.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout $(( 585 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --skip continuous,table,decode,step,attention,bare,prefill,sweep,lengths,batched,long,profile46 2>&1 | grep -v -i warn | tee $OUT/bench.txt | grep -v "gemm_choices" | cut -c1-900
echo "total $(( $(date +%s) - T0 )) s"
