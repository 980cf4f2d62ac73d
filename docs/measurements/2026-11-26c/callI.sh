# GPU call I (one GPU): dsrun --calibration-out on the three one-GPU speed
# plans (plan format 10), which now also times cuBLASLt's first 16
# algorithms for each product and writes the faster ones; and the Llama
# 1.1 B at 4 x 1024, ZeRO 1, beside PyTorch eager and torch.compile in one
# run (speed_compare.sh on one GPU).
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S
B=$PWD/build-gpu/bin
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
(python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/w1.log 2>&1) &
(python3 runtime/bench/hf_model.py gpt2-xl /tmp/models/gpt2-xl --no-onnx > /tmp/w3.log 2>&1) &
python3 runtime/bench/hf_model.py gpt2-small /tmp/models/gpt2-small --no-onnx > /tmp/w2.log 2>&1
wait
echo "inputs after $SECONDS s" >> $S
for p in llama-1b-speed-s1 gpt2-xl-speed-s1 gpt2-small-speed-s1; do
  m=${p%-speed-s1}
  timeout 150 $B/dsrun build-gpu/sp/$p.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors \
    --steps 12 --calibration-out $OUT/cal-$p.yaml > /tmp/cal-$p.log 2>&1
  echo "== $p exit $? after $SECONDS s: $(grep -E 'lean steps' /tmp/cal-$p.log | cut -c60-160)" >> $S
  grep -c "candidate" $OUT/cal-$p.yaml >> $S
done
timeout 420 runtime/bench/speed_compare.sh $B/dsrun build-gpu/sp /tmp/models /tmp/tokens.bin /tmp/cmp 1 llama-1b 4 1024 s1 > $OUT/speed-llama-1b-w1.txt 2>&1
echo "== llama compare after $SECONDS s" >> $S; cat $OUT/speed-llama-1b-w1.txt >> $S
cp /tmp/cmp/*.jsonl /tmp/cmp/*.json $OUT/ 2>/dev/null
