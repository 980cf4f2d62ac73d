#!/bin/sh
# Writes plans of the PyTorch fixture models (test/Compute/Inputs), in fp32
# and bf16 (attention as the default figures choose it: cuDNN's), and of two
# generated models (dsrun's flash attention, the math path, and cuDNN's
# again), for dsrun-kernel-test to run every kernel of on a GPU.
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
# Llama again at 136 tokens: causal attention over several 64-row tiles.
"$dsc" plan "$out/config.json" "$inputs/llama-train.dynamo.onnx" --seq-len 136 \
  -o "$out/llama-train.dynamo-bf16-136.bin" > /dev/null
rm "$out/config.json"
# Generated models at micro batch 4: GPT at 128 tokens (512 rows, so that
# the bias and norm weight gradients take the two-pass column sums of
# include/dsc/ColumnSums.h), in bf16, in fp16 and in bf16 on the math
# attention path, with a vocabulary of 1,001 (logits rows padded to 1,008,
# the tied weight's gradient computed transposed); Llama with grouped-query
# attention (4 query heads, 2 key/value heads) at 136 tokens, which no
# 64-row tile divides.
modelgen=$(dirname "$dsc")/dsc-modelgen
for precision in bf16 fp16; do
  cat > "$out/$precision.json" <<JSON
{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 1,
 "$precision": {"enabled": true}, "zero_optimization": {"stage": 0},
 "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}}
JSON
done
"$modelgen" --arch gpt --layers 2 --hidden 256 --heads 4 --vocab 1001 \
  -o "$out/mg-gpt.onnx" > /dev/null
"$modelgen" --arch llama --layers 2 --hidden 256 --heads 4 --kv-heads 2 \
  --vocab 1000 -o "$out/mg-llama.onnx" > /dev/null
"$dsc" plan "$out/bf16.json" "$out/mg-gpt.onnx" --seq-len 128 \
  --attention flash -o "$out/mg-gpt-bf16.bin" > /dev/null
"$dsc" plan "$out/fp16.json" "$out/mg-gpt.onnx" --seq-len 128 \
  --attention flash -o "$out/mg-gpt-fp16.bin" > /dev/null
"$dsc" plan "$out/bf16.json" "$out/mg-gpt.onnx" --seq-len 128 \
  --attention math -o "$out/mg-gpt-bf16-math.bin" > /dev/null
"$dsc" plan "$out/bf16.json" "$out/mg-llama.onnx" --seq-len 136 \
  --attention flash -o "$out/mg-llama-bf16.bin" > /dev/null
# cuDNN's fused attention: causal with grouped queries, and in fp16.
"$dsc" plan "$out/bf16.json" "$out/mg-llama.onnx" --seq-len 136 \
  --attention cudnn -o "$out/mg-llama-bf16-cudnn.bin" > /dev/null
"$dsc" plan "$out/fp16.json" "$out/mg-gpt.onnx" --seq-len 128 \
  --attention cudnn -o "$out/mg-gpt-fp16-cudnn.bin" > /dev/null
rm "$out/mg-gpt.onnx" "$out/mg-llama.onnx" "$out/bf16.json" "$out/fp16.json"
