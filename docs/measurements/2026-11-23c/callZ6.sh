# GPU call Z6: residual adds folded into the norms (forward and backward).
# Every kernel against the host reference; GPT-2 small's step; losses of
# GPT-2 small and Llama tiny against call Z5's, which they must equal bit
# for bit (the norms round where the adds did).
cd $1
R=$OUT/r; mkdir -p $R
(cmake -S runtime -B build-rt -DCMAKE_BUILD_TYPE=Release > $R/cmake.log 2>&1 && cmake --build build-rt -j16 > $R/build.log 2>&1) || { tail -30 $R/build.log; cd $OUT && tar czf results.tgz r; exit 1; }
./build-rt/bin/dsrun-kernel-test build-gpu/plans/*.bin > $R/kernel-test.log 2>&1; echo "kernel test exit $?"; grep -E "failed|norm" $R/kernel-test.log | grep -v " 0 failed" | head -8
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
for m in gpt2-small llama-tiny; do python3 runtime/bench/hf_model.py $m /tmp/models/$m --no-onnx > $R/weights-$m.log 2>&1 || tail -3 $R/weights-$m.log; done
for p in s1 s2 s1-ckpt; do
  NCCL_NVLS_ENABLE=0 timeout 120 ./build-rt/bin/dsrun build-gpu/speed/gpt2-small-speed-$p.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-small/model.safetensors --steps 12 --profile-step 5 --json $R/speed-$p.json > $R/speed-$p.log 2>&1
  echo "== speed $p exit $?"; grep -E "note|lean steps|device memory" $R/speed-$p.log | tail -3 | cut -c1-250
done
grep -A16 "kernel profile" $R/speed-s1.log
T=build-gpu/train
for m in gpt2-small llama-tiny; do
  NCCL_NVLS_ENABLE=0 timeout 100 ./build-rt/bin/dsrun $T/$m-s1.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors --steps 30 --json $R/$m-s1.json > $R/$m-s1.log 2>&1 || tail -3 $R/$m-s1.log
  grep -E "device memory" $R/$m-s1.log | tail -1 | cut -c1-120
  echo "== $m s1 vs call Z5:"; python3 runtime/bench/compare_losses.py $R/$m-s1.json build-gpu/refs/z/$m-s1-z5.json | tail -1
done
python3 -c "
import json
def L(f): return [(d['step'], d['loss']) for d in map(json.loads, filter(str.strip, open(f))) if 'loss' in d]
for m in ['gpt2-small', 'llama-tiny']:
    a, b = L('$R/'+m+'-s1.json'), L('build-gpu/refs/z/'+m+'-s1-z5.json')
    print(m, len(a), len(b), 'identical' if a == b and a else 'differ')
a, b = L('$R/speed-s1.json'), L('$R/speed-s1-ckpt.json')
print('speed s1 vs s1-ckpt', 'identical' if a == b and a else 'differ')"
cd $OUT && tar czf results.tgz r && rm -rf r
