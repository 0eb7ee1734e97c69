#!/bin/bash
# Next session's first call (issue 46), prepared 2026-11-30d: every GPU test (the build ahead's
# process mode has its first GPU test), then RULER from nothing with the kernels built ahead in a
# process of its own (bench_ruler_gpu.py --variants ahead-process), against AV (1.1559, nothing
# built ahead) and AX (1.1537, built ahead in a thread). Then callAZ.sh.
TESTS_S=200 VARIANTS=ahead-process bash .gpu/g46/callAV.sh
