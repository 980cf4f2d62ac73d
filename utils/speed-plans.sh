#!/bin/sh
# Writes the plans of the speed comparison in docs/training.md ("Speed"):
# one model exported by runtime/bench/hf_model.py at micro batch MICRO x
# 1024 tokens per GPU, accumulation 1, bf16, AdamW 3e-4, clipping 1.0,
# at each ZeRO stage of STAGES, planned for GPU and WORLD ranks; and, when
# STAGES holds 1, ZeRO 1 with every layer checkpointed (NAME-speed-s1-ckpt).
#
#   utils/speed-plans.sh DSC MODEL.onnx NAME OUTDIR [GPU [WORLD [MICRO [STAGES [OVERLAP]]]]]
#
# Defaults: H100, 1 rank, micro batch 16, stages "1 2", and DeepSpeed's
# own overlap_comm (off at stages 1 and 2); OVERLAP "true" turns it on
# and names the plans NAME-speed-sS-overlap. Writes
# OUTDIR/NAME-speed-sS.bin (and -s1-ckpt.bin), with their configs, for
# runtime/bench/speed_compare.sh.
set -eu
dsc=$1 model=$2 name=$3 out=$4 gpu=${5:-H100} world=${6:-1} micro=${7:-16}
stages=${8:-1 2} overlap=${9:-}
mkdir -p "$out"
suffix= comm=
if [ "$overlap" = true ]; then suffix=-overlap comm=', "overlap_comm": true'; fi
for stage in $stages; do
  cfg="$out/$name-speed-s$stage$suffix.json"
  cat > "$cfg" <<JSON
{"train_micro_batch_size_per_gpu": $micro, "gradient_accumulation_steps": 1,
 "gradient_clipping": 1.0,
 "bf16": {"enabled": true},
 "zero_optimization": {"stage": $stage, "reduce_bucket_size": 5e7$comm},
 "optimizer": {"type": "AdamW",
   "params": {"lr": 3e-4, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}}}
JSON
  "$dsc" plan "$cfg" "$model" --seq-len 1024 --gpu "$gpu" --world-size "$world" \
    -o "$out/$name-speed-s$stage$suffix.bin" > "$out/$name-speed-s$stage$suffix.txt"
done
# The checkpointed variant is made beside the plain plans only.
[ -n "$suffix" ] && exit 0
case " $stages " in *" 1 "*)
  cp "$out/$name-speed-s1.json" "$out/$name-speed-s1-ckpt.json"
  "$dsc" plan "$out/$name-speed-s1-ckpt.json" "$model" --seq-len 1024 \
    --gpu "$gpu" --world-size "$world" --checkpoint-layers \
    -o "$out/$name-speed-s1-ckpt.bin" > "$out/$name-speed-s1-ckpt.txt" ;;
esac
