#!/bin/bash
# Issue 46, 2026-11-30e, call G1 of 5: the embedded Gemma 3 270M's GGUF (253 MB) crosses in five
# carries (36 MB, then 4 x 54 MB) into /root/gm on one warm machine; this one also installs the
# wheels (gguf, accelerate, pydantic...) into /root/site and checks transformers' GGUF support.
# After callG0.sh (make_gemma_carries.sh), .gpu/g46 is already in /root; as run in 2026-11-30e it
# carried [".gpu/g46", ".gpu/gm1"].
set -u
mkdir -p /root/gm /root/site && cp .gpu/gm1/p1 /root/gm/ && { [ -d /root/g46 ] || cp -r .gpu/g46 /root/g46; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /root/site /root/g46/whl/*.whl /root/g46/whl_acc/*.whl 2>&1 | grep -v WARN | tail -2
ls -l /root/gm
PYTHONPATH=/root/site python3 -c "
import transformers, accelerate, gguf
from transformers.integrations.ggml import GGUF_CONFIG_MAPPING
print('transformers', transformers.__version__, 'accelerate', accelerate.__version__, 'gemma3 in GGUF_CONFIG_MAPPING', 'gemma3' in GGUF_CONFIG_MAPPING)"
