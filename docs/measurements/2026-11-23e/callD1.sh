# GPU call D1 (one H100): vectorized norm kernels and the flash attention
# on ldmatrix + cp.async. Kernel test on the 17 plans; 30 steps against
# PyTorch (GPT-2 small, Llama tiny, ZeRO 1, 1 GPU, 4 x 256); profiled steps
# of GPT-2 small (16 x 1024) and the Llama 1.1 B (4 x 1024).
cd $1
R=$OUT/r; mkdir -p $R
BIN=build-gpu/rt/bin
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 200 $BIN/dsrun-kernel-test build-gpu/plans/*.bin > $R/kernel-test.log 2>&1; echo "kernel test exit $?"; grep -iE "fail|mismatch|error" $R/kernel-test.log | head -8; tail -3 $R/kernel-test.log
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
for m in gpt2-small llama-tiny; do python3 runtime/bench/hf_model.py $m /tmp/models/$m --no-onnx > $R/weights-$m.log 2>&1 || tail -3 $R/weights-$m.log; done
python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > $R/weights-llama-1b.log 2>&1 &
S=build-gpu/speed7
for p in gpt2-small-speed-s1; do
  m=${p%%-speed*}
  timeout 100 $BIN/dsrun $S/$p.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors --steps 8 --profile-step 6 --json $R/$p.json > $R/$p.log 2>&1; echo "== $p exit $?"
  grep -E "step [0-9]+:.*lean|device memory" $R/$p.log | cut -c1-200
  grep -A14 "kernel profile" $R/$p.log | cut -c1-120
done
C=/tmp/cmp
timeout 200 runtime/bench/train_compare.sh $BIN/dsrun build-gpu/train1 /tmp/models /tmp/tokens.bin $C 1 30 256 \
  gpt2-small-s1 llama-tiny-s1 llama-tiny-s1-fp16 > $R/cmp.txt 2>&1
cat $R/cmp.txt | cut -c1-220
cp $C/*.json $C/*.jsonl $R/ 2>/dev/null
wait
for p in llama-1b-speed-s1; do
  m=${p%%-speed*}
  timeout 120 $BIN/dsrun $S/$p.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors --steps 8 --profile-step 6 --json $R/$p.json > $R/$p.log 2>&1; echo "== $p exit $?"
  grep -E "step [0-9]+:.*lean|device memory" $R/$p.log | cut -c1-200
  grep -A14 "kernel profile" $R/$p.log | cut -c1-120
done
cd $OUT && tar czf results.tgz r && rm -rf r
