# GPU call E (one GPU): fp32 against PyTorch in fp32, where rounding is
# too small to part the runs for long: GPT-2 small and the Llama 1.1 B at
# ZeRO 1, one GPU, 200 steps (utils/training-plans.sh variant s1-fp32,
# both sides without TF32); and the first 10 gradient norms of GPT-2 small
# at world 2 in fp32, the yardstick for call B's bf16 norms.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S
B=$PWD/build-gpu/bin F=$PWD/build-gpu/f C=/tmp/cmp
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
python3 runtime/bench/hf_model.py gpt2-small /tmp/models/gpt2-small --no-onnx > /tmp/w-gpt2.log 2>&1
(python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/w-llama.log 2>&1) &
timeout 60 python3 runtime/bench/torch_reference.py --model /tmp/models/gpt2-small --data /tmp/tokens.bin \
  --ds-config $F/gpt2-small-w2-fp32-config.json --seq 256 --world 2 --steps 10 \
  --json $OUT/gpt2-small-w2-fp32-ref10.jsonl > /tmp/w2fp32.log 2>&1
echo "w2 fp32 norms exit $? after $SECONDS s" >> $S
timeout 200 runtime/bench/train_compare.sh $B/dsrun $F /tmp/models /tmp/tokens.bin $C 1 200 256 gpt2-small-s1-fp32 >> $S 2>&1
wait
echo "== llama (from $SECONDS s)" >> $S
timeout $((400 - SECONDS)) runtime/bench/train_compare.sh $B/dsrun $F /tmp/models /tmp/tokens.bin $C 1 200 256 llama-1b-s1-fp32 >> $S 2>&1
echo "== end after $SECONDS s" >> $S
cp $C/*fp32*.json $C/*-ref.jsonl $OUT/ 2>/dev/null
