#!/bin/bash
# Session 2026-11-30c call AQ (issue 46): a saved 7B's load, CPU then .to() against device_map (accelerate carried).
set -u; T0=$(date +%s); source .gpu/g46/setup2.sh
python3 -c "import accelerate" 2>&1 | tail -1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/acc .gpu/g46/whl_acc/*.whl 2>&1 | grep -v WARN | tail -2
python3 -c "import psutil; print('psutil', psutil.__version__)"
PYTHONPATH=/tmp/acc:$PYTHONPATH timeout 400 python3 .gpu/g46/exp_load.py $OUT/load.jsonl > $OUT/load.txt 2>&1; tail -c 4000 $OUT/load.txt
echo "total $(( $(date +%s) - T0 )) s"
