# GPU call D (one GPU): PyTorch's own noise floor at world 2: the
# reference of call B run again with HF's eager attention instead of SDPA
# (the same training, rounded differently), GPT-2 small and the Llama 1.1 B,
# 200 steps; compared here with call B's SDPA reference and dsrun runs.
S=$OUT/summary.txt
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S
mkdir -p /tmp/plans && tar xzf build-gpu/plans.tgz -C /tmp/plans
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
python3 runtime/bench/hf_model.py gpt2-small /tmp/models/gpt2-small --no-onnx > /tmp/w-gpt2.log 2>&1
(python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/w-llama.log 2>&1) &
mkdir -p /tmp/eager
timeout 150 python3 runtime/bench/torch_reference.py --model /tmp/models/gpt2-small --data /tmp/tokens.bin \
  --ds-config /tmp/plans/t2/gpt2-small-s0.json --seq 256 --world 2 --steps 200 --attn eager \
  --json /tmp/eager/gpt2-small-w2-bf16-eager.jsonl > /tmp/eager/gpt2-small.log 2>&1
echo "gpt2-small eager exit $? after $SECONDS s" >> $S
wait
timeout 300 python3 runtime/bench/torch_reference.py --model /tmp/models/llama-1b --data /tmp/tokens.bin \
  --ds-config /tmp/plans/t2/llama-1b-s0.json --seq 256 --world 2 --steps 200 --attn eager \
  --json /tmp/eager/llama-1b-w2-bf16-eager.jsonl > /tmp/eager/llama-1b.log 2>&1
echo "llama-1b eager exit $? after $SECONDS s" >> $S
tail -1 /tmp/eager/*.jsonl >> $S
cp /tmp/eager/*.jsonl $OUT/
