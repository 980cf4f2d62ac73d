# GPU call A3 (2 x H200): GPT-2 XL (1.5 B) at micro batch 4 x 1024, ZeRO 2
# and 3, beside PyTorch DDP, FSDP2 and compiled FSDP2 (issue 15); kernel
# profiles of GPT-2 XL ZeRO 2 and of the Llama 1.1 B at ZeRO 3.
cd $1
R=$OUT/r; mkdir -p $R
BIN=build-gpu/rt/bin
export NCCL_NVLS_ENABLE=0
[ -f /tmp/tokens.bin ] || python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
[ -f /tmp/models/gpt2-xl/model.safetensors ] || python3 runtime/bench/hf_model.py gpt2-xl /tmp/models/gpt2-xl --no-onnx > $R/weights-xl.log 2>&1 &
[ -f /tmp/models/llama-1b/model.safetensors ] || python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > $R/weights-llama.log 2>&1 &
wait
ls -la /tmp/models/*/model.safetensors
S=build-gpu/speed3
timeout 480 runtime/bench/speed_compare.sh $BIN/dsrun $S /tmp/models /tmp/tokens.bin $R/speed 2 gpt2-xl 4 1024 s2 s3 > $R/speed-xl.txt 2>&1
cat $R/speed-xl.txt
grep -h -E "^dsrun: step 3|lean steps|rank 0 device memory" $R/speed/*.log | cut -c1-400
timeout 60 $BIN/dsrun -n 2 $S/gpt2-xl-speed-s2.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-xl/model.safetensors --steps 6 --profile-step 5 > $R/xl-profile.log 2>&1; echo "xl profile exit $?"
grep -A24 "kernel profile" $R/xl-profile.log | cut -c1-200
timeout 60 $BIN/dsrun -n 2 build-gpu/speed2/llama-1b-speed-s3.bin --data /tmp/tokens.bin --init /tmp/models/llama-1b/model.safetensors --steps 6 --profile-step 5 > $R/llama-profile.log 2>&1; echo "llama profile exit $?"
grep -A30 "kernel profile" $R/llama-profile.log | cut -c1-200
cd $OUT && tar czf results.tgz r && rm -rf r
