# GPU call F (one GPU): the host offload's rates after this session's
# loops, for the planner's defaults: dsrun --calibration-out on the Llama
# 1.1 B at ZeRO 2 + CPU optimizer and ZeRO 3 + CPU parameters (one rank,
# the machine's 16 cores), 6 steps each.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S; nproc >> $S
B=$PWD/build-gpu/bin
mkdir -p /tmp/plans && tar xzf build-gpu/plans.tgz -C /tmp/plans
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/w-llama.log 2>&1
for p in s2-cpu s3-cpuparam; do
  timeout 120 $B/dsrun /tmp/plans/t1/llama-1b-$p.bin --data /tmp/tokens.bin --init /tmp/models/llama-1b/model.safetensors \
    --steps 6 --timed-steps 6 --calibration-out $OUT/cal-llama-1b-$p.yaml > /tmp/cal-$p.log 2>&1
  echo "== $p exit $? after $SECONDS s" >> $S
  grep -E "step time, mean|^dsrun: step 6" /tmp/cal-$p.log | cut -c1-400 >> $S
done
