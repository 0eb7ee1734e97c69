#!/bin/bash
# Issue 46, 2026-11-30e, call G2 of 5: the Gemma GGUF's part 2 into /root/gm (see callG1.sh).
cp .gpu/gm2/p2 /root/gm/ && ls -l /root/gm
