#!/bin/bash
# Call 3 (issue 46, gpu46): RULER end to end through the CLI against the engine's prefill (4K-128K, one sample each), then the GPU tests.
set -u; T0=$(date +%s); source .gpu/g46/setup.sh; cd $G/code
timeout 400 python3 benchmarks/bench_ruler_gpu.py --out /root/ruler --samples 1 --lengths 4096,16384,65536,131072 2>&1 | grep -v -i "warn\|Loading\|Writing" | tee $OUT/ruler.txt | grep '"kind"' | cut -c1-2500
cp /root/ruler/result.json $OUT/ruler_result.json 2>/dev/null
echo "ruler done $(( $(date +%s) - T0 )) s"
timeout $(( 590 - ($(date +%s) - T0) )) python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider 2>&1 | tee $OUT/gputests.txt | tail -4
echo "total $(( $(date +%s) - T0 )) s"
