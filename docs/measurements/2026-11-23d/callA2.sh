# GPU call A2 (2 x H200): GPT-2 small's speed on two GPUs beside PyTorch
# DDP, FSDP2 and compiled FSDP2 (issue 15); the Llama 1.1 B at ZeRO 3:
# its gathers against raw NCCL at the plan's message sizes.
cd $1
R=$OUT/r; mkdir -p $R
BIN=build-gpu/rt/bin
ldd $BIN/dsrun | grep -q "not found" && { BIN=build-rt/bin; [ -x $BIN/dsrun ] || (cmake -S runtime -B build-rt -DCMAKE_BUILD_TYPE=Release > $R/cmake.log 2>&1 && cmake --build build-rt -j32 > $R/build.log 2>&1) || { tail -30 $R/build.log; exit 1; }; }
[ -f /tmp/tokens.bin ] || python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
[ -f /tmp/models/gpt2-small/model.safetensors ] || python3 runtime/bench/hf_model.py gpt2-small /tmp/models/gpt2-small --no-onnx > $R/weights.log 2>&1
(nice -n 10 python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > $R/weights-llama.log 2>&1) &
S=build-gpu/speed2
timeout 420 runtime/bench/speed_compare.sh $BIN/dsrun $S /tmp/models /tmp/tokens.bin $R/speed 2 gpt2-small 16 1024 s1 s2 s1-ckpt > $R/speed-gpt2.txt 2>&1
cat $R/speed-gpt2.txt
grep -h -E "lean steps|device memory" $R/speed/*.log | cut -c1-200
wait
export NCCL_NVLS_ENABLE=0
timeout 90 $BIN/dsrun -n 2 $S/llama-1b-speed-s3.bin --data /tmp/tokens.bin --init /tmp/models/llama-1b/model.safetensors --steps 8 --json $R/llama-s3.json > $R/llama-s3.log 2>&1; echo "llama s3 exit $?"
grep -E "^dsrun: step [1-4]|lean steps|device memory" $R/llama-s3.log | cut -c1-400
timeout 90 $BIN/dsrun-bench -n 2 --plan $S/llama-1b-speed-s3.bin > $R/llama-bench.log 2>&1; echo "bench exit $?"
tail -30 $R/llama-bench.log
cd $OUT && tar czf results.tgz r && rm -rf r
