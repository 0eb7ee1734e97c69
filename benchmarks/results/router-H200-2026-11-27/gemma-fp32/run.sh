# bash .gpu/rg2d/run.sh DEADLINE JOBS: assemble the Gemma GGUF, convert to fp32 HF, run the
# float32 and bfloat16 benches side by side (bench_router --deadline DEADLINE each), pack into $OUT.
ROOT=$PWD; W=$ROOT/build/rg2; D=$1; J=${2:-8}
cd $W/code
export PYTHONPATH=/tmp/site:$PWD/src:$PWD PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
[ -d /tmp/site/bm25s ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site whl/*.whl 2>&1 | tail -2
ls -la $W/p; date -u +%T
cat $W/p/p0 $W/p/p1 $W/p/p2 $W/p/p3 | gunzip > $W/gemma3.gguf
echo "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818  $W/gemma3.gguf" | sha256sum -c || exit 1
(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader -l 3 > $W/mem.txt 2>&1 &)
python3 rg/convert.py $W/gemma3.gguf $W/models/gemma3 rg/sums_gemma3.json float32 2>&1 | grep -v "it/s\]\|Warning\|warn(" | tail -3
date -u +%T
ln -sfn $W/models models
for dt in float32 bfloat16; do
  timeout $((D + 40)) python3 benchmarks/bench_router.py --model hf/models/gemma3 -M prompt_mode=completion -M dtype=$dt --length 4096 \
    --suite "ruler tasks=niah_single_2 lengths=16k samples=${S:-8} essays=data/PaulGrahamEssays.json" \
    --suite "ruler tasks=niah_single_2 lengths=32k samples=${S:-8} essays=data/PaulGrahamEssays.json" \
    --suite "longctx tiers=2" \
    --suite "ruler tasks=cwe lengths=16k samples=5 essays=data/PaulGrahamEssays.json" \
    --strategies none,truncate,retrieve,auto,map-reduce --jobs $J --deadline $D \
    --out $W/runs/$dt --json $W/$dt.json > $W/bench_$dt.txt 2> $W/bench_$dt.err &
done
wait
date -u +%T
sort -t, -k2 -n $W/mem.txt | tail -3
cp $W/models/gemma3/config.json $W/config_fp32.json
tar czf $OUT/rg2.tgz -C $W runs float32.json bfloat16.json bench_float32.txt bench_float32.err bench_bfloat16.txt bench_bfloat16.err mem.txt config_fp32.json 2>/dev/null
ls -la $OUT
for dt in float32 bfloat16; do echo "== $dt"; tail -3 $W/bench_$dt.err; sed -n '/Per task/,$p' $W/bench_$dt.txt | cut -c1-330; done
