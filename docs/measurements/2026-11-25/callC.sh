# GPU call C (one H100): the fused rotary embedding.
#  1. dsrun-kernel-test on the 17 kernel-test plans (utils/kernel-test-plans.sh;
#     the Llama export's rotary and rotary-grad kernels in fp32 and bf16,
#     at 8 x 16 and at 136 tokens);
#  2. the tiny Llama export of the compute tests trained for 30 steps
#     against PyTorch (HF LlamaForCausalLM from the fixture's config and the
#     export's own weights, dsc plan --weights-out), bf16 and fp16, ZeRO 0-3,
#     CPU offloads, checkpointed (utils/training-plans.sh ... 1 64 30);
#  3. the HF Llama 1.1 B exported (graph only) for planning here.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $S
(python3 runtime/bench/hf_model.py llama-1b /tmp/llama-1b > /tmp/export.log 2>&1; echo "export $?" >> $S) &
cmake -S runtime -B /tmp/rt -DCMAKE_BUILD_TYPE=Release > /tmp/rt.log 2>&1 && cmake --build /tmp/rt -j12 --target dsrun dsrun-kernel-test >> /tmp/rt.log 2>&1; echo "build $?" >> $S
grep -E " error" /tmp/rt.log | head -5 >> $S
timeout 200 /tmp/rt/bin/dsrun-kernel-test build-gpu/kplans/*.bin > /tmp/kt.log 2>&1; echo "kernel test exit $?" >> $S
grep -iE "rotary|fail|mismatch" /tmp/kt.log | head -20 >> $S; tail -3 /tmp/kt.log >> $S
timeout 300 runtime/bench/train_compare.sh /tmp/rt/bin/dsrun build-gpu/train build-gpu build-gpu/tokens.bin /tmp/cmp 1 30 64 \
  llama-fixture-s0 llama-fixture-s1 llama-fixture-s2 llama-fixture-s3 llama-fixture-s1-fp16 llama-fixture-s3-ckpt llama-fixture-s2-cpu llama-fixture-s3-cpuparam > /tmp/cmp.txt 2>&1
cut -c1-220 /tmp/cmp.txt >> $S
wait
cp /tmp/llama-1b/model.onnx $OUT/llama-1b.onnx 2>/dev/null; cp /tmp/llama-1b/config.json $OUT/llama-1b-config.json 2>/dev/null
ls -la /tmp/llama-1b >> $S 2>&1; tail -3 /tmp/export.log >> $S
cd /tmp && tar czf $OUT/logs.tgz kt.log cmp.txt cmp rt.log export.log 2>/dev/null
