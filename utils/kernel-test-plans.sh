#!/bin/sh
# Writes plans of the PyTorch fixture models (test/Compute/Inputs), in fp32
# and bf16, and of two generated models, for dsrun-kernel-test to run every
# kernel of on a GPU.
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
# Two generated models at micro batch 4 x 128 tokens: 512 rows, so that
# the bias and norm weight gradients take the two-pass column sums
# (include/dsc/ColumnSums.h) and attention runs at a longer sequence.
modelgen=$(dirname "$dsc")/dsc-modelgen
cat > "$out/config.json" <<JSON
{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1,
 "bf16": {"enabled": true}, "zero_optimization": {"stage": 0},
 "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}}
JSON
for arch in gpt llama; do
  "$modelgen" --arch $arch --layers 2 --hidden 256 --heads 4 --vocab 1000 \
    -o "$out/mg-$arch.onnx" > /dev/null
  "$dsc" plan "$out/config.json" "$out/mg-$arch.onnx" --seq-len 128 \
    -o "$out/mg-$arch-bf16.bin" > /dev/null
  rm "$out/mg-$arch.onnx"
done
rm "$out/config.json"
