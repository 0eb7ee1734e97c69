#!/bin/bash
# Issue 46, 2026-11-30f: call G0 (Gemma's tokenizer and the wheels into /root) and the TMA GEMV
# experiment (callBC.sh) in one call, then G1-G4 and G6 on the same warm machine.
set -u
bash .gpu/gtok/callG0.sh
LIMIT=${LIMIT:-200} BUDGET=${BUDGET:-140} bash .gpu/g46/callBC.sh
