#!/bin/bash
set -e
G=/work/main/.gpu/g46
rm -rf $G/code && mkdir -p $G/code
cd /work/wt-gpu46
git ls-files --cached --others --exclude-standard | grep -v '^benchmarks/results/' | tar cf - -T - | tar xf - -C $G/code
git -C /work/wt-gpu46 log -1 --format=%H > $G/code/COMMIT
du -sh $G
