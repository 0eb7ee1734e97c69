#!/bin/bash
# Issue 46, prepared 2026-11-30d: RULER from nothing without the build ahead, then with it in a
# thread (the default), on one machine (bench_ruler_gpu.py --variants no-ahead,default).
TESTS=0 VARIANTS=no-ahead,default bash .gpu/g46/callAV.sh
