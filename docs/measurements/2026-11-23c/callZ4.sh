# GPU call Z4: bias gradients in the weight gradients' epilogues (BGRADA/B)
# and their copies into the parameters' gradients elided; norms a warp per
# row. Every kernel against the host reference; GPT-2 small's step;
# losses of GPT-2 small and Llama tiny against PyTorch.
cd $1
R=$OUT/r; mkdir -p $R
(cmake -S runtime -B build-rt -DCMAKE_BUILD_TYPE=Release > $R/cmake.log 2>&1 && cmake --build build-rt -j16 > $R/build.log 2>&1) || { tail -30 $R/build.log; cd $OUT && tar czf results.tgz r; exit 1; }
./build-rt/bin/dsrun-kernel-test build-gpu/plans/*.bin > $R/kernel-test.log 2>&1; echo "kernel test exit $?"; grep -E "failed|gemm|norm|note" $R/kernel-test.log | grep -v " 0 failed" | head -12
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
for m in gpt2-small llama-tiny; do python3 runtime/bench/hf_model.py $m /tmp/models/$m --no-onnx > $R/weights-$m.log 2>&1 || tail -3 $R/weights-$m.log; done
for p in s1 s2 s1-ckpt; do
  NCCL_NVLS_ENABLE=0 timeout 120 ./build-rt/bin/dsrun build-gpu/speed/gpt2-small-speed-$p.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-small/model.safetensors --steps 12 --profile-step 5 --json $R/speed-$p.json > $R/speed-$p.log 2>&1
  echo "== speed $p exit $?"; grep -E "note|lean steps|device memory" $R/speed-$p.log | tail -3 | cut -c1-250
done
grep -A16 "kernel profile" $R/speed-s1.log
T=build-gpu/train
timeout 120 python3 runtime/bench/torch_reference.py --model /tmp/models/llama-tiny --data /tmp/tokens.bin --ds-config $T/llama-tiny-s1.json --seq 256 --steps 30 --json $R/llama-tiny-ref.jsonl > $R/llama-tiny-ref.log 2>&1 || tail -3 $R/llama-tiny-ref.log
for m in gpt2-small llama-tiny; do
  NCCL_NVLS_ENABLE=0 timeout 100 ./build-rt/bin/dsrun $T/$m-s1.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors --steps 30 --json $R/$m-s1.json > $R/$m-s1.log 2>&1 || tail -3 $R/$m-s1.log
  grep -E "device memory" $R/$m-s1.log | tail -1 | cut -c1-120
  echo "== $m s1 vs call Z3/Z2:"; python3 runtime/bench/compare_losses.py $R/$m-s1.json build-gpu/refs/z/$m-s1-z2.json | tail -1
done
echo "== gpt2-small vs PyTorch:"; python3 runtime/bench/compare_losses.py $R/gpt2-small-s1.json build-gpu/refs/z/gpt2-small-ref.jsonl | tail -2
echo "== llama-tiny vs PyTorch:"; python3 runtime/bench/compare_losses.py $R/llama-tiny-s1.json $R/llama-tiny-ref.jsonl | tail -2
cd $OUT && tar czf results.tgz r && rm -rf r
