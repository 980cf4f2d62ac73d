# GPU call F (one H100): products adding into the sum of their outputs
# (compute::accumulateProducts). Plans made here with this commit's dsc:
#   utils/kernel-test-plans.sh build/bin/dsc build/test/ComputeInputs build-gpu/kplans
#   utils/training-plans.sh build/bin/dsc .../llama-train.dynamo.onnx llama-fixture build-gpu/train 1 64 30
#   utils/speed-plans.sh build/bin/dsc llama-1b.onnx llama-1b build-gpu/speed H100 1 4 1
#   s1-nosums: the same config, dsc plan ... --no-product-sums
# 1. dsrun-kernel-test on the 17 plans; 2. the tiny Llama 30 steps against
# PyTorch in nine configurations; 3. the Llama 1.1 B's profiled step and
# speed_compare.sh (s1-nosums, s1, s1-ckpt, PyTorch eager and compiled).
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $S
(python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/model.log 2>&1; echo "model $?" >> $S) &
cmake -S runtime -B build-rt -DCMAKE_BUILD_TYPE=Release > /tmp/rt.log 2>&1 && cmake --build build-rt -j14 --target dsrun dsrun-kernel-test >> /tmp/rt.log 2>&1; echo "build $?" >> $S
timeout 120 build-rt/bin/dsrun-kernel-test build-gpu/kplans/*.bin > /tmp/kt.log 2>&1; echo "kernel test exit $?" >> $S
grep -iE "gemm|swiglu|fail|mismatch" /tmp/kt.log | head -12 >> $S; tail -2 /tmp/kt.log >> $S
timeout 240 runtime/bench/train_compare.sh build-rt/bin/dsrun build-gpu/train build-gpu build-gpu/tokens.bin /tmp/cmp 1 30 64 \
  llama-fixture-s0 llama-fixture-s1 llama-fixture-s2 llama-fixture-s3 llama-fixture-s1-fp16 llama-fixture-s1-ckpt llama-fixture-s3-ckpt llama-fixture-s2-cpu llama-fixture-s3-cpuparam > /tmp/cmp.txt 2>&1
grep -E "==|steps|memory" /tmp/cmp.txt | cut -c1-200 >> $S
wait
mkdir -p /tmp/prof
timeout 90 build-rt/bin/dsrun build-gpu/speed/llama-1b-speed-s1.bin --data build-gpu/tokens.bin \
  --init /tmp/models/llama-1b/model.safetensors --steps 8 --profile-step 6 > /tmp/prof/s1.log 2>&1; echo "== s1 profile exit $?" >> $S
grep -E "step (1|6|8):|device memory" /tmp/prof/s1.log | cut -c1-150 >> $S
grep -A18 "kernel profile" /tmp/prof/s1.log | cut -c1-140 >> $S
timeout 300 runtime/bench/speed_compare.sh build-rt/bin/dsrun build-gpu/speed /tmp/models build-gpu/tokens.bin /tmp/sc 1 llama-1b 4 1024 \
  s1-nosums s1 s1-ckpt > /tmp/sc.txt 2>&1
cut -c1-200 /tmp/sc.txt >> $S
for v in s1-nosums s1; do echo "$v: $(grep -oE 'step [0-9]+: loss [0-9.]+' /tmp/sc/llama-1b-$v-w1.log | tr '\n' ' ' | cut -c1-300)" >> $S; done
cd /tmp && tar czf $OUT/logs.tgz kt.log cmp.txt cmp prof sc sc.txt rt.log model.log 2>/dev/null
