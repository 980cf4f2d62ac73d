# GPU call C2 (2 x H200): the Llama 1.1 B at ZeRO 3 with fused pointwise
# chains (plan format 7): step, gathers, profile.
cd $1
R=$OUT/r; mkdir -p $R
BIN=build-gpu/rt/bin
export NCCL_NVLS_ENABLE=0
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > $R/weights.log 2>&1 || tail -3 $R/weights.log
timeout 90 $BIN/dsrun -n 2 build-gpu/speed5/llama-1b-speed-s3.bin --data /tmp/tokens.bin --init /tmp/models/llama-1b/model.safetensors --steps 8 --profile-step 6 --json $R/llama-s3.json > $R/llama-s3.log 2>&1; echo "llama s3 exit $?"
grep -E "^dsrun: step [1-4]|lean steps|device memory" $R/llama-s3.log | cut -c1-400
grep -A12 "kernel profile" $R/llama-s3.log | cut -c1-120
cd $OUT && tar czf results.tgz r && rm -rf r
