#!/bin/bash
# Session 2026-11-30c call AP (issue 46): what a decode step between prefill chunks costs (eager, graph, after a sync).
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
timeout 560 python3 .gpu/g46/exp_steps.py $OUT/steps.jsonl > $OUT/steps.txt 2>&1; tail -c 6000 $OUT/steps.txt
echo "total $(( $(date +%s) - T0 )) s"
