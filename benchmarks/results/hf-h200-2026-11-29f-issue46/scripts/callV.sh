#!/bin/bash
# Session 2026-11-29f call V (issue 46): programmatic dependent launch, A/B in one process.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
python3 -c "
import triton, torch
from longscope.models.hf import gemv
from triton.backends.nvidia.compiler import CUDAOptions
print('launch_pdl option', 'launch_pdl' in CUDAOptions.__dataclass_fields__, 'gdc', gemv._gdc is not None, 'pdl_supported', gemv.pdl_supported(torch.device('cuda')))
" 2>&1 | tail -3 | tee $OUT/pdl.txt
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_decode_ops_gpu.py -p no:cacheprovider 2>&1 | tail -15 | tee $OUT/tests.txt
echo "tests done $(( $(date +%s) - T0 )) s"
timeout $(( 585 - ($(date +%s) - T0) )) python3 benchmarks/bench_hf.py --out $OUT/bench.jsonl --profile $OUT/profile --skip continuous,table,decode,step,attention,bare,prefill,sweep,lengths,long --step-modes triton,triton-nopdl --profile-rows 8,64 --profile-context 4096 --batched-rows 8,64 --batched-modes triton,triton-nopdl 2>&1 | grep -v -i warn | tee $OUT/bench.txt | grep -v "gemm_choices" | cut -c1-460
echo "total $(( $(date +%s) - T0 )) s"
