# GPU call W: the Llama-structured 1.1 B for 200 steps with every layer
# checkpointed (ZeRO 1 and 3: bit for bit against the uncheckpointed run of
# call R, kept in refs/), and at ZeRO 0 and ZeRO 2 + CPU optimizer against
# the PyTorch reference of call R.
cd $1
R=$OUT/r; mkdir -p $R
(cmake -S runtime -B build-rt -DCMAKE_BUILD_TYPE=Release > $R/cmake.log 2>&1 && cmake --build build-rt -j16 > $R/build.log 2>&1) || { tail -30 $R/build.log; cd $OUT && tar czf results.tgz r; exit 1; }
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > $R/weights.log 2>&1 || tail -3 $R/weights.log
T=build-gpu/train
for p in s1-ckpt s3-ckpt s0 s2-cpu; do
  NCCL_NVLS_ENABLE=0 timeout 170 ./build-rt/bin/dsrun $T/llama-1b-$p.bin --data /tmp/tokens.bin --init /tmp/models/llama-1b/model.safetensors --steps 200 --json $R/llama-1b-$p.json > $R/llama-1b-$p.log 2>&1
  echo "== llama-1b-$p exit $?"; grep -E "device memory|tokens/s \(|mean|error" $R/llama-1b-$p.log | tail -3 | cut -c1-230
  python3 runtime/bench/compare_losses.py $R/llama-1b-$p.json build-gpu/refs/llama-1b-w1-bf16-ref.jsonl | tail -2
  case $p in *ckpt) python3 -c "
import json
def L(f): return [(d['step'], d['loss']) for d in map(json.loads, filter(str.strip, open(f))) if 'loss' in d]
a, b = L('build-gpu/refs/llama-1b-s1-w1.json'), L('$R/llama-1b-$p.json')
print('vs uncheckpointed ZeRO 1:', len(a), len(b), 'identical' if a == b else 'differ')" ;; esac
done
cd $OUT && tar czf results.tgz r && rm -rf r
