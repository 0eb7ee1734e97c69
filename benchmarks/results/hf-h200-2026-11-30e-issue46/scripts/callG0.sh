#!/bin/bash
# Issue 46, Gemma 3 270M on the card, call G0 (before G1-G5): the wheels and scripts (.gpu/g46)
# and Gemma's tokenizer as transformers 5.24 converts it (.gpu/gtok) into /root.
set -u
mkdir -p /root/gm && rm -rf /root/g46 /root/gtok && cp -r .gpu/g46 /root/g46 && cp -r .gpu/gtok /root/gtok && ls -l /root/gtok
# the device's transformers reads the 5.24 tokenizer: the engine's check on it, and its ids
PYTHONPATH=$PWD/src python3 -c "
import transformers
from transformers import AutoTokenizer
from longscope.models.hf.checks import tokenizer_problem
t = AutoTokenizer.from_pretrained('/root/gtok')
print('transformers', transformers.__version__, 'problem:', repr(tokenizer_problem(t, 'gemma3_text', 'completion')))
print(t('Hello world, the quick brown fox.').input_ids)" 2>&1 | tail -3
