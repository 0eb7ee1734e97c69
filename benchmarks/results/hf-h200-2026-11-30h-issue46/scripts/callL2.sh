#!/bin/bash
# Issue 46, sixteenth pass, call L2 (carry [".gpu/g46"]): the split stage timed as a step runs it
# (28 layers' caches back to back, exp_attention_layers.py) per split target and keys a balanced
# split reads at least; then bench_hf.py's batched 64/32 rows of 8K answers at 128 and 512 keys.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
S=benchmarks/results/hf-h200-2026-11-30h-issue46/scripts
timeout 140 python3 $S/exp_attention_layers.py --rows 64,32 --lengths 1024-9216,4096 --targets 2048,1024 \
  --min-keys 128,512 --configs 64/w4s2,128/w4s2,64/w4s3,128/w8s3,32/w2s3,32/w2s2,64/w2s2 --all-rows 2>&1 \
  | tee $OUT/attention_layers.jsonl | python3 -c "
import json,sys
for line in sys.stdin:
    try: r=json.loads(line)
    except Exception: print(line[:300]); continue
    if r.get('kind')!='decode_attention': print(line[:300]); continue
    c=sorted([x for x in r['configs'] if 'ms' in x], key=lambda x:x['ms'])
    print(r['rows'], r['lengths'], 't', r['target'], 'min', r['min_keys'], 'splits', r['splits'], 'floor', r['floor_ms'], ' '.join(f\"{x['config']}:{x['ms']}:{x.get('of_read')}\" for x in c[:4]), 'err', r['worst_error'])
"
echo "exp done at $(( $(date +%s) - T0 )) s"
timeout $(( 585 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl \
  --skip move,first,continuous,table,decode,step,attention,bare,prefill,sweep,long,ops46,profile46,lengths \
  --batched-rows 64,32 --split-min-keys 512,128 --decode-modes triton 2>&1 | grep -v -i warn > $OUT/bench.txt
grep -v gemm_choices $OUT/bench.txt | grep -i "batched\|split_target\|read\|Error\|error" | cut -c1-700
echo "total $(( $(date +%s) - T0 )) s"
