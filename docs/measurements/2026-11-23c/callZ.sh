# GPU call Z: copy elision (plans made with it) and the pointwise loads
# issued before use: every kernel against the host reference, GPT-2
# small's step before/after, and losses bit for bit against the plans
# made with copies.
cd $1
R=$OUT/r; mkdir -p $R
(cmake -S runtime -B build-rt -DCMAKE_BUILD_TYPE=Release > $R/cmake.log 2>&1 && cmake --build build-rt -j16 > $R/build.log 2>&1) || { tail -30 $R/build.log; cd $OUT && tar czf results.tgz r; exit 1; }
./build-rt/bin/dsrun-kernel-test build-gpu/plans/*.bin > $R/kernel-test.log 2>&1; echo "kernel test exit $?"; tail -2 $R/kernel-test.log
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
for m in gpt2-small llama-tiny llama-1b; do python3 runtime/bench/hf_model.py $m /tmp/models/$m --no-onnx > $R/weights-$m.log 2>&1 || tail -3 $R/weights-$m.log; done
same() { python3 -c "
import json, sys
def L(f): return [(d['step'], d['loss']) for d in map(json.loads, filter(str.strip, open(f))) if 'loss' in d]
a, b = L(sys.argv[1]), L(sys.argv[2])
print('  ', sys.argv[2].split('/')[-1], len(a), len(b), 'identical' if a == b and a else 'DIFFER')" $1 $2; }
for v in old new; do
  P=build-gpu/speed/gpt2-small-speed-s1.bin; [ $v = old ] && P=build-gpu/speed-old/gpt2-small-speed-s1.bin
  NCCL_NVLS_ENABLE=0 timeout 120 ./build-rt/bin/dsrun $P --data /tmp/tokens.bin --init /tmp/models/gpt2-small/model.safetensors --steps 12 --profile-step 5 --json $R/speed-$v.json > $R/speed-$v.log 2>&1
  echo "== speed $v exit $?"; grep -E "mean|device memory" $R/speed-$v.log | tail -2 | cut -c1-250
done
same $R/speed-old.json $R/speed-new.json
for p in speed-s2 speed-s1-ckpt; do
  NCCL_NVLS_ENABLE=0 timeout 120 ./build-rt/bin/dsrun build-gpu/speed/gpt2-small-$p.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-small/model.safetensors --steps 12 --json $R/$p.json > $R/$p.log 2>&1
  echo "== $p exit $?"; grep -E "mean|device memory" $R/$p.log | tail -2 | cut -c1-250
done
for m in gpt2-small llama-tiny; do for v in s1 s3; do
  for w in train-old train; do
    NCCL_NVLS_ENABLE=0 timeout 100 ./build-rt/bin/dsrun build-gpu/$w/$m-$v.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors --steps 30 --json $R/$m-$v-$w.json > $R/$m-$v-$w.log 2>&1 || { echo "$m-$v-$w failed"; tail -3 $R/$m-$v-$w.log; }
  done
  same $R/$m-$v-train-old.json $R/$m-$v-train.json; grep -E "device memory" $R/$m-$v-train.log | tail -1 | cut -c1-200
done; done
NCCL_NVLS_ENABLE=0 timeout 150 ./build-rt/bin/dsrun build-gpu/train/llama-1b-s1.bin --data /tmp/tokens.bin --init /tmp/models/llama-1b/model.safetensors --steps 200 --json $R/llama-1b-s1.json > $R/llama-1b-s1.log 2>&1; echo "== llama-1b exit $?"; grep -E "mean|device memory" $R/llama-1b-s1.log | tail -2 | cut -c1-250
same build-gpu/refs/llama-1b-s1-w1.json $R/llama-1b-s1.json
cd $OUT && tar czf results.tgz r && rm -rf r
