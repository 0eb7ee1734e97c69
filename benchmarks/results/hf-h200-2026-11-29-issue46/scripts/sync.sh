#!/bin/bash
# Copy the gpu worktree's files into the main checkout's ignored .gpu/gpu/code (what `run` carries).
set -e
rm -rf /work/main/.gpu/gpu/code && mkdir -p /work/main/.gpu/gpu/code
cd /work/wt-gpu
git ls-files --cached --others --exclude-standard | grep -v '^benchmarks/results/' | tar cf - -T - | tar xf - -C /work/main/.gpu/gpu/code
git -C /work/wt-gpu log -1 --format=%H > /work/main/.gpu/gpu/code/COMMIT
du -sh /work/main/.gpu/gpu /work/main/.gpu/pa /work/main/.gpu/pb
