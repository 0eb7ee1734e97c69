#!/bin/bash
# Issue 46, seventeenth pass, acceptance on one card (carry [".gpu/g46"]): every GPU test on HEAD,
# then RULER through the CLI from nothing as shipped (callAV.sh: TESTS=1, VARIANTS=default).
# callM2.sh follows at once on the same machine (the decode bars).
TESTS=1 VARIANTS=default bash .gpu/g46/callAV.sh
