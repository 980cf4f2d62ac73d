# GPU call F (one GPU): flash attention's register budget capped so that
# more blocks share an SM at head size 64 (forward 4, dK/dV 3, dQ 4; a
# few bytes of spill), and the shared-memory carveout at its largest.
# Every kernel of the 17 kernel-test plans; then the build before (dsrun)
# and after (dsrun-lb), alternating, on GPT-2 XL and the Llama 1.1 B (one
# GPU, ZeRO 1, step 10 profiled).
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S
B=$PWD/build-gpu/bin
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
(python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/w1.log 2>&1) &
(python3 runtime/bench/hf_model.py gpt2-xl /tmp/models/gpt2-xl --no-onnx > /tmp/w3.log 2>&1) &
timeout 120 $B/dsrun-kernel-test build-gpu/kt/*.bin > /tmp/kt.log 2>&1
echo "== kernel test exit $? after $SECONDS s" >> $S
grep -E "failed|attention" /tmp/kt.log | grep -v " 0 failed" >> $S
wait
mkdir -p /tmp/o
for k in 1 2; do for b in dsrun dsrun-lb; do for p in gpt2-xl-speed-s1 llama-1b-speed-s1; do
  m=${p%-speed-s1}
  timeout 150 $B/$b build-gpu/sp/$p.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors \
    --steps 12 --profile-step 10 --json /tmp/o/$b-$p-$k.jsonl > /tmp/o/$b-$p-$k.log 2>&1
  echo "== $b $p run $k exit $?: $(grep -E 'lean steps' /tmp/o/$b-$p-$k.log | cut -c60-160)" >> $S
  grep -E "^  attention" /tmp/o/$b-$p-$k.log >> $S
done; done; done
tar czf $OUT/logs.tgz -C /tmp/o .
echo "== end after $SECONDS s" >> $S
