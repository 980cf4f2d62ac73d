#!/bin/sh
# Writes the plans of the speed comparison in docs/training.md ("Speed"):
# one model exported by runtime/bench/hf_model.py at micro batch MICRO x
# 1024 tokens per GPU, accumulation 1, bf16, AdamW 3e-4, clipping 1.0,
# at each ZeRO stage of STAGES, planned for GPU and WORLD ranks; and, when
# STAGES holds 1, ZeRO 1 with every layer checkpointed (NAME-speed-s1-ckpt).
#
#   utils/speed-plans.sh DSC MODEL.onnx NAME OUTDIR [GPU [WORLD [MICRO [STAGES]]]]
#
# Defaults: H100, 1 rank, micro batch 16, stages "1 2". Writes
# OUTDIR/NAME-speed-sS.bin (and -s1-ckpt.bin), with their configs, for
# runtime/bench/speed_compare.sh.
set -eu
dsc=$1 model=$2 name=$3 out=$4 gpu=${5:-H100} world=${6:-1} micro=${7:-16}
stages=${8:-1 2}
mkdir -p "$out"
for stage in $stages; do
  cfg="$out/$name-speed-s$stage.json"
  cat > "$cfg" <<JSON
{"train_micro_batch_size_per_gpu": $micro, "gradient_accumulation_steps": 1,
 "gradient_clipping": 1.0,
 "bf16": {"enabled": true},
 "zero_optimization": {"stage": $stage, "reduce_bucket_size": 5e7},
 "optimizer": {"type": "AdamW",
   "params": {"lr": 3e-4, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}}}
JSON
  "$dsc" plan "$cfg" "$model" --seq-len 1024 --gpu "$gpu" --world-size "$world" \
    -o "$out/$name-speed-s$stage.bin" > "$out/$name-speed-s$stage.txt"
done
case " $stages " in *" 1 "*)
  cp "$out/$name-speed-s1.json" "$out/$name-speed-s1-ckpt.json"
  "$dsc" plan "$out/$name-speed-s1-ckpt.json" "$model" --seq-len 1024 \
    --gpu "$gpu" --world-size "$world" --checkpoint-layers \
    -o "$out/$name-speed-s1-ckpt.bin" > "$out/$name-speed-s1-ckpt.txt" ;;
esac
