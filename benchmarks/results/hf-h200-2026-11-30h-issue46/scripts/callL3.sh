#!/bin/bash
# Issue 46, sixteenth pass, call L3 (carry [".gpu/g46"]): the split stage against the flat
# variant (equal pieces of 256/512/1,024 keys, exp_attention_layers.py --flat), 28 layers' caches
# back to back, at 64 and 32 rows of 1,024-9,216 keys and of 4,096.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
S=benchmarks/results/hf-h200-2026-11-30h-issue46/scripts
timeout 400 python3 $S/exp_attention_layers.py --rows 64,32,8 --lengths 1024-9216,4096 --targets 2048 \
  --flat 256,512,1024 --configs 64/w4s2,128/w4s2,64/w4s3,128/w8s3,32/w2s3,32/w2s2,64/w2s2 --all-rows 2>&1 \
  | tee $OUT/attention_flat.jsonl | python3 -c "
import json,sys
for line in sys.stdin:
    try: r=json.loads(line)
    except Exception: print(line[:300]); continue
    if r.get('kind')!='decode_attention': print(line[:300]); continue
    b=r['best']; print(r['rows'], r['lengths'], 'split', b['config'], b['ms'], b.get('of_read'), '| flat', ' '.join(f\"{c}:{v['best']['config']}:{v['best']['ms']}:{v['best'].get('of_read')}\" for c,v in r['flat'].items() if v['best']), 'err', r['worst_error'])
"
echo "total $(( $(date +%s) - T0 )) s"
