export PYTHONUNBUFFERED=1
source setup.sh
set +e
nvidia-smi -L | tee $OUT/cards.txt
python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__)" | tee -a $OUT/cards.txt
date -u | tee -a $OUT/cards.txt
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu --tb=short -rA 2>&1 | grep -v Warning | tail -40 | tee $OUT/gpu_tests.txt
timeout 345 python3 benchmarks/bench_devices.py --out /tmp/m --devices 1,2,4 --ruler-lengths 8k,16k,32k --longctx-lengths 8k,16k,32k 2>&1 | tee $OUT/log.txt | grep -v "Loading\|Writing\|│" | grep -v '"kind": "run"' | tail -25
cp /tmp/m/result.json $OUT/result.json
echo "left processes: $(ps -eo cmd | grep -c '[m]ultiprocessing')"
