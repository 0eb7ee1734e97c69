#!/bin/bash
# Issue 46, sixteenth pass, call L1 (carry [".gpu/g46"]): every GPU test (the 12 masked-attention
# cases among them), then the decode attention's split stage at 64/32 rows against the read rate
# (callKA's experiment) in what is left of the call.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 260 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tail -25 | tee $OUT/gpu_tests.txt
echo "tests done at $(( $(date +%s) - T0 )) s"
timeout $(( 575 - ($(date +%s) - T0) )) python3 benchmarks/results/hf-h200-2026-11-30g-issue46/scripts/exp_decode_attention.py \
  --rows 64,32 --lengths 2048-8192,4096 --targets 2048,1024,4096 --budget 60 --all-rows 2>&1 \
  | tee $OUT/decode_attention.jsonl | python3 -c "
import json,sys
for line in sys.stdin:
    try: r=json.loads(line)
    except Exception: print(line[:300]); continue
    if r.get('kind')!='decode_attention': print(line[:300]); continue
    print({k:r[k] for k in ('rows','lengths','target','splits','split_size','floor_ms','untuned','engine_best','best','worst_error')})
"
echo "total $(( $(date +%s) - T0 )) s"
