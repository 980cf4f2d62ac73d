# GPU call Z2: pointwise programs of few registers kept in registers:
# every kernel against the host reference, GPT-2 small's step profile,
# losses against the local-register interpreter's (call Z).
cd $1
R=$OUT/r; mkdir -p $R
(cmake -S runtime -B build-rt -DCMAKE_BUILD_TYPE=Release > $R/cmake.log 2>&1 && cmake --build build-rt -j16 > $R/build.log 2>&1) || { tail -30 $R/build.log; cd $OUT && tar czf results.tgz r; exit 1; }
./build-rt/bin/dsrun-kernel-test build-gpu/plans/*.bin > $R/kernel-test.log 2>&1; echo "kernel test exit $?"; grep -iE "fail|pointwise" $R/kernel-test.log | head -5
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
for m in gpt2-small llama-tiny; do python3 runtime/bench/hf_model.py $m /tmp/models/$m --no-onnx > $R/weights-$m.log 2>&1 || tail -3 $R/weights-$m.log; done
NCCL_NVLS_ENABLE=0 timeout 120 ./build-rt/bin/dsrun build-gpu/speed/gpt2-small-speed-s1.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-small/model.safetensors --steps 12 --profile-step 5 --json $R/speed.json > $R/speed.log 2>&1
echo "== speed exit $?"; grep -E "mean|device memory" $R/speed.log | tail -2 | cut -c1-250; grep -A8 "kernel profile" $R/speed.log
for m in gpt2-small llama-tiny; do
  NCCL_NVLS_ENABLE=0 timeout 100 ./build-rt/bin/dsrun build-gpu/train/$m-s1.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors --steps 30 --json $R/$m-s1.json > $R/$m-s1.log 2>&1 || tail -3 $R/$m-s1.log
  grep -E "mean of steps" $R/$m-s1.log | cut -c1-120
done
cd $OUT && tar czf results.tgz r && rm -rf r
