# GPU call E2 (one H100): correctness after the SwiGLU fusion and the
# in-place weight gradients.
#  1. dsrun-kernel-test on the 17 kernel-test plans (utils/kernel-test-plans.sh;
#     the Llama exports' swiglu and swiglu-grad kernels in fp32 and bf16);
#  2. the tiny Llama export of the compute tests trained for 30 steps
#     against PyTorch (utils/training-plans.sh ... llama-fixture ... 1 64 30),
#     bf16 and fp16, ZeRO 0-3, CPU offloads, checkpointed.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $S
cmake -S runtime -B build-rt -DCMAKE_BUILD_TYPE=Release > /tmp/rt.log 2>&1 && cmake --build build-rt -j14 --target dsrun dsrun-kernel-test >> /tmp/rt.log 2>&1; echo "build $?" >> $S
timeout 200 build-rt/bin/dsrun-kernel-test build-gpu/kplans/*.bin > /tmp/kt.log 2>&1; echo "kernel test exit $?" >> $S
grep -iE "swiglu|rotary|fail|mismatch" /tmp/kt.log | head -20 >> $S; tail -3 /tmp/kt.log >> $S
timeout 300 runtime/bench/train_compare.sh build-rt/bin/dsrun build-gpu/train build-gpu build-gpu/tokens.bin /tmp/cmp 1 30 64 \
  llama-fixture-s0 llama-fixture-s1 llama-fixture-s2 llama-fixture-s3 llama-fixture-s1-fp16 llama-fixture-s1-ckpt llama-fixture-s3-ckpt llama-fixture-s2-cpu llama-fixture-s3-cpuparam > /tmp/cmp.txt 2>&1
cut -c1-220 /tmp/cmp.txt >> $S
cd /tmp && tar czf $OUT/logs.tgz kt.log cmp.txt cmp rt.log 2>/dev/null
