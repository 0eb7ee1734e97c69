#!/bin/bash
# Session 2026-11-29d call P (issue 46, 92e1128; same machine as call O, warm): batch 1 after 128K and 64 rows at split target 2048.
source .gpu/g46/setup2.sh >/dev/null 2>&1; timeout 225 python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --skip continuous,table,decode,step,attention,bare,prefill,sweep,profile46,long --decode-modes triton --decode-lengths 131072 --batched-rows 64 --split-targets 2048
