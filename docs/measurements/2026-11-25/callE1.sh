# GPU call E1 (one H100): the Llama 1.1 B at 4 x 1024, ZeRO 1, bf16, after
# copy elision learnt to ignore dims of extent 1 (weight gradients written
# in place) and the SwiGLU gate was fused. Plans made here:
#   utils/speed-plans.sh build/bin/dsc llama-1b.onnx llama-1b build-gpu/speed H100 1 4 1
#   s1-noswiglu: the same config, dsc plan ... --skip-fusion=fuse-swiglu
#   s1-calld:    call D's s1 plan (before both changes), run by this build
# 1. profiled steps (--profile-step 6) of s1 and s1-noswiglu;
# 2. runtime/bench/speed_compare.sh: the four plans and PyTorch eager and
#    compiled on the same model in the same run.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $S
(python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/model.log 2>&1; echo "model $?" >> $S) &
cmake -S runtime -B build-rt -DCMAKE_BUILD_TYPE=Release > /tmp/rt.log 2>&1 && cmake --build build-rt -j14 --target dsrun dsrun-kernel-test >> /tmp/rt.log 2>&1; echo "build $?" >> $S
wait
cat /tmp/models/llama-1b/weights.sha256 >> $S 2>&1
mkdir -p /tmp/prof
for v in s1 s1-noswiglu; do
  timeout 90 build-rt/bin/dsrun build-gpu/speed/llama-1b-speed-$v.bin --data build-gpu/tokens.bin \
    --init /tmp/models/llama-1b/model.safetensors --steps 8 --profile-step 6 \
    --json /tmp/prof/$v.json > /tmp/prof/$v.log 2>&1; echo "== $v profile exit $?" >> $S
  grep -E "step (1|5|6|7|8):|device memory" /tmp/prof/$v.log | cut -c1-150 >> $S
  grep -A22 "kernel profile" /tmp/prof/$v.log | cut -c1-140 >> $S
done
timeout 420 runtime/bench/speed_compare.sh build-rt/bin/dsrun build-gpu/speed /tmp/models build-gpu/tokens.bin /tmp/sc 1 llama-1b 4 1024 \
  s1-calld s1-noswiglu s1 s1-ckpt > /tmp/sc.txt 2>&1
cut -c1-200 /tmp/sc.txt >> $S
for v in s1-calld s1-noswiglu s1; do echo "$v: $(grep -oE 'step [0-9]+: loss [0-9.]+' /tmp/sc/llama-1b-$v-w1.log | tr '\n' ' ' | cut -c1-300)" >> $S; done
cd /tmp && tar czf $OUT/logs.tgz prof sc sc.txt rt.log model.log 2>/dev/null
