#!/bin/bash
# Issue 46, 2026-11-30e: RULER from nothing as shipped (the build ahead in a thread), then without
# the build ahead, on one machine: callAZ's pair in the other order (bench_ruler_gpu.py --variants default,no-ahead).
TESTS=0 VARIANTS=default,no-ahead bash .gpu/g46/callAV.sh
