#!/bin/bash
# Session 2026-11-30 call AF (issue 46): where a batched 64-row step's time goes beyond the graph replay (device window mid-run, host call times); batch 1 after 8K/32K/128K on current code.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout $(( 560 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --skip continuous,table,decode,step,attention,bare,prefill,sweep,long,ops46,profile46 --batched-rows 64,32 --batched-window 3000,/tmp/win --decode-modes triton 2>&1 | grep -v -i warn > $OUT/bench.txt; grep -v gemm_choices $OUT/bench.txt | cut -c1-1500
gzip -c /tmp/win.rows64.json > $OUT/win64.json.gz 2>/dev/null
echo "total $(( $(date +%s) - T0 )) s"
