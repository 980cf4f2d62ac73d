# GPU call Z5: the cross entropy's log-sum-exp in one pass and 8 logits
# per load (its gradient too), the embedding's gradient by runs of equal
# ids; the norm kernels of call Z4 reverted. Every kernel against the host
# reference; GPT-2 small's step beside PyTorch eager and compiled; losses.
cd $1
R=$OUT/r; mkdir -p $R
(cmake -S runtime -B build-rt -DCMAKE_BUILD_TYPE=Release > $R/cmake.log 2>&1 && cmake --build build-rt -j16 > $R/build.log 2>&1) || { tail -30 $R/build.log; cd $OUT && tar czf results.tgz r; exit 1; }
./build-rt/bin/dsrun-kernel-test build-gpu/plans/*.bin > $R/kernel-test.log 2>&1; echo "kernel test exit $?"; grep -E "failed|gemm|cross|gather" $R/kernel-test.log | grep -v " 0 failed" | head -12
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
for m in gpt2-small llama-tiny; do python3 runtime/bench/hf_model.py $m /tmp/models/$m --no-onnx > $R/weights-$m.log 2>&1 || tail -3 $R/weights-$m.log; done
for p in s1 s2 s1-ckpt; do
  NCCL_NVLS_ENABLE=0 timeout 120 ./build-rt/bin/dsrun build-gpu/speed/gpt2-small-speed-$p.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-small/model.safetensors --steps 12 --profile-step 5 --json $R/speed-$p.json > $R/speed-$p.log 2>&1
  echo "== speed $p exit $?"; grep -E "note|lean steps|device memory" $R/speed-$p.log | tail -3 | cut -c1-250
done
grep -A16 "kernel profile" $R/speed-s1.log
timeout 150 python3 runtime/bench/torch_train_speed.py --model /tmp/models/gpt2-small --micro 16 --seq 1024 --steps 10 > $R/torch-eager.log 2>&1; tail -1 $R/torch-eager.log
timeout 240 python3 runtime/bench/torch_train_speed.py --model /tmp/models/gpt2-small --micro 16 --seq 1024 --steps 10 --compile > $R/torch-compile.log 2>&1; tail -1 $R/torch-compile.log
T=build-gpu/train
for m in gpt2-small llama-tiny; do
  NCCL_NVLS_ENABLE=0 timeout 100 ./build-rt/bin/dsrun $T/$m-s1.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors --steps 30 --json $R/$m-s1.json > $R/$m-s1.log 2>&1 || tail -3 $R/$m-s1.log
  grep -E "device memory" $R/$m-s1.log | tail -1 | cut -c1-120
  echo "== $m s1 vs call Z4:"; python3 runtime/bench/compare_losses.py $R/$m-s1.json build-gpu/refs/z/$m-s1-z4.json | tail -1
done
echo "== gpt2-small vs PyTorch:"; python3 runtime/bench/compare_losses.py $R/gpt2-small-s1.json build-gpu/refs/z/gpt2-small-ref.jsonl | tail -2
echo "== llama-tiny vs PyTorch:"; python3 runtime/bench/compare_losses.py $R/llama-tiny-s1.json build-gpu/refs/z/llama-tiny-ref.jsonl | tail -2
cd $OUT && tar czf results.tgz r && rm -rf r
