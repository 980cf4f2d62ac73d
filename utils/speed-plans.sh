#!/bin/sh
# Writes the plans of the speed comparison in docs/training.md ("Speed"):
# one model exported by runtime/bench/hf_model.py at micro batch 16 x
# 1024 tokens, accumulation 1, bf16, AdamW 3e-4, clipping 1.0, ZeRO 1
# and 2, planned for an H100; and ZeRO 1 with every layer checkpointed
# (NAME-speed-s1-ckpt).
#
#   utils/speed-plans.sh DSC MODEL.onnx NAME OUTDIR [GPU]
#
# Writes OUTDIR/NAME-speed-s1.bin, -s2.bin and -s1-ckpt.bin, with their
# configs.
set -eu
dsc=$1 model=$2 name=$3 out=$4 gpu=${5:-H100}
mkdir -p "$out"
for stage in 1 2; do
  cfg="$out/$name-speed-s$stage.json"
  cat > "$cfg" <<JSON
{"train_micro_batch_size_per_gpu": 16, "gradient_accumulation_steps": 1,
 "gradient_clipping": 1.0,
 "bf16": {"enabled": true},
 "zero_optimization": {"stage": $stage, "reduce_bucket_size": 5e7},
 "optimizer": {"type": "AdamW",
   "params": {"lr": 3e-4, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}}}
JSON
  "$dsc" plan "$cfg" "$model" --seq-len 1024 --gpu "$gpu" \
    -o "$out/$name-speed-s$stage.bin" > "$out/$name-speed-s$stage.txt"
done
cp "$out/$name-speed-s1.json" "$out/$name-speed-s1-ckpt.json"
"$dsc" plan "$out/$name-speed-s1-ckpt.json" "$model" --seq-len 1024 \
  --gpu "$gpu" --checkpoint-layers \
  -o "$out/$name-speed-s1-ckpt.bin" > "$out/$name-speed-s1-ckpt.txt"
