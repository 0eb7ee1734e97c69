# sourced: wheels, environment, card facts (code = the repository root this call runs in)
R=$PWD; G=$R/.gpu/g46
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $G/whl/*.whl 2>&1 | grep -v WARN | tail -2
export PYTHONPATH=/tmp/site:$G/site:$R/src:$R PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
{ nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv,noheader; python3 -c "import torch, transformers, triton; print('torch', torch.__version__, 'transformers', transformers.__version__, 'triton', triton.__version__)"; echo "code commit $(cat $G/COMMIT)"; date -u; } | tee $OUT/card.txt
