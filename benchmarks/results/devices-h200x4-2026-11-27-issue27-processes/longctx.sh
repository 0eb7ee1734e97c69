export PYTHONUNBUFFERED=1
source setup.sh
set +e
nvidia-smi -L | tee $OUT/cards.txt
date -u | tee -a $OUT/cards.txt
timeout 230 python3 benchmarks/bench_devices.py --out /tmp/m --devices 1,2,4 --suites longctx --longctx-lengths 8k,16k,32k 2>&1 | tee $OUT/log2.txt | grep -v "Loading\|Writing\|│" | grep '"summary"'
cp /tmp/m/result.json $OUT/result2.json
