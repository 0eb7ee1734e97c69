export PYTHONUNBUFFERED=1
source setup.sh
set +e
nvidia-smi -L | tee $OUT/cards.txt
date -u | tee -a $OUT/cards.txt
timeout 310 python3 benchmarks/bench_devices.py --out /tmp/r2 --devices 1,2,4 --suites ruler --ruler-lengths 8k,16k,32k --limit 2 2>&1 | tee $OUT/log.txt | grep -v "Loading\|Writing\|│" | grep '"kind": "run"' | cut -c1-400
cp /tmp/r2/result.json $OUT/result.json
