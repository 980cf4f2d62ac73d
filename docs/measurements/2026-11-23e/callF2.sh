# GPU call F2 (2 x H200): dsrun --calibration-out on each plan of issue
# 15 (GPT-2 small ZeRO 1 and 2, GPT-2 XL ZeRO 2 and 3, the Llama 1.1 B at
# ZeRO 3): per-kind kernel rates and the gap between kernels, for dsc plan
# --calibration to estimate with (plan format 8), now with the bus
# bandwidth of each collective kind.
cd $1
R=$OUT/r; mkdir -p $R
BIN=build-gpu/rt/bin
export NCCL_NVLS_ENABLE=0
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
python3 runtime/bench/hf_model.py gpt2-small /tmp/models/gpt2-small --no-onnx > $R/w1.log 2>&1 &
python3 runtime/bench/hf_model.py gpt2-xl /tmp/models/gpt2-xl --no-onnx > $R/w2.log 2>&1 &
python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > $R/w3.log 2>&1 &
wait
S=build-gpu/speed8
for p in gpt2-small-speed-s1 gpt2-small-speed-s2 gpt2-xl-speed-s2 gpt2-xl-speed-s3 llama-1b-speed-s3; do
  m=${p%%-speed*}
  timeout 100 $BIN/dsrun -n 2 $S/$p.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors --steps 10 --calibration-out $R/cal-$p.yaml --json $R/$p.json > $R/$p.log 2>&1; echo "== $p exit $?"
  grep -E "step time, mean|lean steps|rank 0 device memory" $R/$p.log | cut -c1-250
  grep -E "kernel_gap|bus_bytes" $R/cal-$p.yaml
done
cd $OUT && tar czf results.tgz r && rm -rf r
