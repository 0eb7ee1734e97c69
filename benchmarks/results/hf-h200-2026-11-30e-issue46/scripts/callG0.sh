#!/bin/bash
# Issue 46, Gemma 3 270M on the card, call G0 (before G1-G5): the wheels and scripts (.gpu/g46)
# and Gemma's tokenizer as transformers 5.24 converts it (.gpu/gtok) into /root.
set -u
mkdir -p /root/gm && rm -rf /root/g46 /root/gtok && cp -r .gpu/g46 /root/g46 && cp -r .gpu/gtok /root/gtok && ls -l /root/gtok
