#!/bin/bash
# issue 25: the router side by side on both embedded models (hf engine). Call 1 assembles, converts,
# checks tokenizers and starts; later calls resume the stored runs (bench_router is resumable).
# bash .gpu/rg3/run.sh DEADLINE
set -u
R=$PWD; W=$R/build/rg3; D=${1:-300}; T0=$(date +%s)
mkdir -p $W; rm -rf $W/code; cp -a $R/.gpu/rg3/code $W/code; cd $W/code
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $R/.gpu/rg3/whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site:$PWD/src:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
mkdir -p $W/p; cp $R/.gpu/rg3p*/p? $W/p/ 2>/dev/null
if [ ! -f $W/ready ]; then
  [ $(ls $W/p | wc -l) = 6 ] || { ls -la $W/p; echo "PIECES MISSING"; exit 1; }
  cat $W/p/p* > $W/all.gz.bin; ls -la $W/p $W/all.gz.bin
  head -c 237790231 $W/all.gz.bin | gunzip > $W/gemma3.gguf; tail -c +237790232 $W/all.gz.bin | gunzip > $W/smollm2.gguf
  sha256sum -c <<S || exit 1
a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818  $W/gemma3.gguf
b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  $W/smollm2.gguf
S
  mkdir -p $W/tokvm; cp -a $R/.gpu/rg3/tok/* $W/tokvm/; gunzip -f $W/tokvm/gemma3/tokenizer.json.gz
  for m in gemma3 smollm2; do python3 rg/convert.py $W/$m.gguf $W/models/$m rg/sums_$m.json 2>&1 | grep -v "it/s\]\|Warning\|warn(" | tail -2 & done; wait
  ok=1; for m in gemma3 smollm2; do python3 rg/tokcheck.py $W/models/$m $W/tokvm/$m $m $R/.gpu/rg3/ids.json > $W/tok_$m.txt 2>&1 || ok=0; grep -v Warning $W/tok_$m.txt; done
  [ $ok = 1 ] || { echo "TOKENIZER CHECK FAILED"; exit 1; }
  touch $W/ready; echo "ready after $(( $(date +%s) - T0 )) s"
fi
ln -sfn $W/models models
suites() { local S=4; for len in 16k 32k; do for t in niah_single_2 niah_multikey_1 niah_multivalue cwe; do
  echo "ruler tasks=$t lengths=$len samples=$S essays=data/PaulGrahamEssays.json"; done; done
  echo "longctx tiers=2"; echo "longctx tiers=3"
  for t in niah_single_2 niah_multikey_1 niah_multivalue cwe; do echo "ruler tasks=$t lengths=4k samples=$S essays=data/PaulGrahamEssays.json"; done
  echo "longctx tiers=1"; }
mapfile -t SU < <(suites); SA=(); for s in "${SU[@]}"; do SA+=(--suite "$s"); done
(nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv,noheader -l 5 > $W/gpu.txt 2>&1 &)
run() { local m=$1 j=$2; shift 2
  timeout $((D + 60)) python3 benchmarks/bench_router.py --model hf/models/$m "$@" --length 4096 --max-tokens 64 "${SA[@]}" \
    --strategies ${STRATS:-map-reduce,auto,retrieve,truncate,none} --jobs $j --deadline $D --out $W/runs/$m --json $W/$m.json > $W/bench_$m.txt 2> $W/bench_$m.err; echo "$m exit $?"; }
run smollm2 6 & run gemma3 8 -M prompt_mode=completion & wait
cd $W; tail -3 gpu.txt; tar cf - runs | xz -T0 -6 > $OUT/runs.tar.xz; cp smollm2.json gemma3.json bench_*.txt bench_*.err $OUT/ 2>/dev/null
ls -la $OUT; for m in smollm2 gemma3; do echo "== $m"; tail -4 bench_$m.err; grep -c "stopped at the deadline" bench_$m.txt bench_$m.err; done
echo "total $(( $(date +%s) - T0 )) s"
