#!/bin/sh
# Writes plans of the PyTorch fixture models (test/Compute/Inputs), in fp32
# and bf16, for dsrun-kernel-test to run every kernel of on a GPU.
#
#   utils/kernel-test-plans.sh DSC INPUTS_DIR OUTDIR
#
# INPUTS_DIR holds the unzipped exports (build/test/ComputeInputs).
set -eu
dsc=$1 inputs=$2 out=$3
mkdir -p "$out"
for model in gpt2-train.dynamo llama-train.dynamo bert-train.dynamo \
             bert-train.torchscript vit-train.dynamo vit-train.torchscript; do
  case $model in
    bert*) loss=masked-lm ;;
    vit*) loss=sequence-classification ;;
    *) loss=causal-lm ;;
  esac
  for precision in fp32 bf16; do
    half=false; [ $precision = bf16 ] && half=true
    cat > "$out/config.json" <<JSON
{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 1,
 "bf16": {"enabled": $half}, "zero_optimization": {"stage": 0},
 "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}}
JSON
    "$dsc" plan "$out/config.json" "$inputs/$model.onnx" --seq-len 16 \
      --loss $loss -o "$out/$model-$precision.bin" > /dev/null
  done
done
rm "$out/config.json"
