#!/bin/sh
# Writes the plan fuzzer's seeds (test/fuzz/seeds-plan): small plans of a
# one-layer GPT for every kind of section content -- stage 0 with
# accumulation, stage 1 with CPU optimizer offload, stage 2, stage 3 with
# CPU and NVMe offload and checkpointing, stage 3 with ZeRO++ hpZ, with
# qwZ, with MiCS, and with qgZ over 2 nodes of 2 (fp16) -- and
# one in YAML; and the tiny
# GPT-2 export of the compute tests in bf16, whose products carry every
# epilogue (bias, GELU, its gradient, bias gradients) and whose norms take
# their residual adds; and the tiny Llama export, for RMS norms, rotary
# embeddings, grouped-query attention, the SwiGLU gate and products that
# add into their sum, planned with a calibration that names one product's
# cuBLASLt algorithm. Inputs go to BUILD_DIR/plan-seeds, so that the
# model paths the plans record stay the same from run to run.
#
#   utils/make-plan-seeds.sh BUILD_DIR
set -eu
bin=$1/bin
out=test/fuzz/seeds-plan
tmp=$1/plan-seeds
rm -rf "$tmp" && mkdir -p "$tmp"
"$bin/dsc-modelgen" --arch gpt --layers 1 --hidden 16 --heads 2 --vocab 52 \
  -o "$tmp/gpt.onnx" > /dev/null
utils/runtime-plans.sh "$bin/dsc" "$tmp/gpt.onnx" 2 8 "$tmp/plans" 400
cp "$tmp/plans/s0-ovfalse-ga2-none-none-ckpt.bin" "$out/stage0-accumulation.bin"
cp "$tmp/plans/s1-ovtrue-ga1-cpu-none.bin" "$out/stage1-offload.bin"
cp "$tmp/plans/s2-ovtrue-ga1-none-none-ckpt.bin" "$out/stage2.bin"
cp "$tmp/plans/s3-ovfalse-ga2-nvme-nvme.bin" "$out/stage3-nvme.bin"
cp "$tmp/plans/s3-ovfalse-ga1-cpu-cpu-ckpt.bin" "$out/stage3-offload.bin"
cp "$tmp/plans/s3-ovtrue-ga2-none-none-hpz.bin" "$out/stage3-hpz.bin"
cp "$tmp/plans/s3-ovtrue-ga2-none-none-qwz.bin" "$out/stage3-qwz.bin"
cp "$tmp/plans/s3-ovtrue-ga2-none-none-mics1.bin" "$out/stage3-mics.bin"
cat > "$tmp/qgz.json" <<'JSON'
{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
 "fp16": {"enabled": true},
 "zero_optimization": {"stage": 3, "overlap_comm": true, "reduce_bucket_size": 400,
   "stage3_param_persistence_threshold": 20, "zero_quantized_gradients": true}}
JSON
"$bin/dsc" plan "$tmp/qgz.json" "$tmp/gpt.onnx" --nodes 2 --gpus-per-node 2 \
  --seq-len 8 -o "$out/stage3-qgz.bin" > /dev/null
"$bin/dsc" show "$out/stage2.bin" > "$out/stage2.yaml"
echo '{"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": true}}' > "$tmp/bf16.json"
"$bin/dsc" plan "$tmp/bf16.json" "$1/test/ComputeInputs/gpt2-train.dynamo.onnx" \
  --seq-len 8 -o "$out/epilogues.bin" > /dev/null
cat > "$tmp/cal.yaml" <<'YAML'
gemm_algorithms:
  - { product: { m: 16, n: 64, k: 32, batch: 1, trans_a: false, trans_b: true,
                 ld_a: 32, ld_b: 32, ld_c: 64, stride_a: 0, stride_b: 0,
                 stride_c: 1024, epilogue: none, alpha: 1, beta: 0 },
      type: bf16, candidate: 2 }
YAML
"$bin/dsc" plan "$tmp/bf16.json" "$1/test/ComputeInputs/llama-train.dynamo.onnx" \
  --seq-len 8 --calibration "$tmp/cal.yaml" -o "$out/llama.bin" > /dev/null
rm -rf "$tmp"
