#!/bin/bash
# Session 2026-11-29c call F (issue 46, 8676b9d): probe load paths, capture parts, BLAS per step, thin GEMVs.
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 420 python3 .gpu/g46/probe47.py $OUT/probe.jsonl ${PARTS:-e2,e3,e1} 2>&1 | grep -v -i "warn\|Loading\|Writing" | cut -c1-400
echo "total $(( $(date +%s) - T0 )) s"
