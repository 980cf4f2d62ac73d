# GPU call D (one H100): the fused rotary embedding on the Llama 1.1 B at
# 4 x 1024, ZeRO 1, bf16 (plans made here from call C's export:
#   utils/speed-plans.sh build/bin/dsc llama-1b.onnx llama-1b build-gpu/speed H100 1 4 1
#   dsc plan llama-1b-speed-s1.json llama-1b.onnx --seq-len 1024 --gpu H100 \
#       --world-size 1 --skip-fusion=fuse-rotary -o llama-1b-speed-s1-norotary.bin)
#  1. profiled steps (--profile-step 6) with and without the fusion;
#  2. runtime/bench/speed_compare.sh: both, the checkpointed plan, and
#     PyTorch eager and compiled on the same model in the same run.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $S
(python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/model.log 2>&1; echo "model $?" >> $S) &
cmake -S runtime -B /tmp/rt -DCMAKE_BUILD_TYPE=Release > /tmp/rt.log 2>&1 && cmake --build /tmp/rt -j14 --target dsrun >> /tmp/rt.log 2>&1; echo "build $?" >> $S
wait
cat /tmp/models/llama-1b/weights.sha256 >> $S 2>&1
mkdir -p /tmp/prof
for v in s1 s1-norotary; do
  timeout 90 /tmp/rt/bin/dsrun build-gpu/speed/llama-1b-speed-$v.bin --data build-gpu/tokens.bin \
    --init /tmp/models/llama-1b/model.safetensors --steps 8 --profile-step 6 \
    --json /tmp/prof/$v.json > /tmp/prof/$v.log 2>&1; echo "== $v profile exit $?" >> $S
  grep -E "step (1|5|6|7|8):" /tmp/prof/$v.log | cut -c1-150 >> $S
  grep -A22 "kernel profile" /tmp/prof/$v.log | cut -c1-140 >> $S
done
timeout 400 runtime/bench/speed_compare.sh /tmp/rt/bin/dsrun build-gpu/speed /tmp/models build-gpu/tokens.bin /tmp/sc 1 llama-1b 4 1024 \
  s1 s1-norotary s1-ckpt > /tmp/sc.txt 2>&1
cut -c1-200 /tmp/sc.txt >> $S
cd /tmp && tar czf $OUT/logs.tgz prof sc sc.txt rt.log model.log 2>/dev/null
