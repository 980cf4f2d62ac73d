#!/bin/sh
# Writes the plans and configs runtime/bench/train_compare.sh trains and
# checks against PyTorch: one model exported by runtime/bench/hf_model.py,
# bf16, micro batch 4 x sequence SEQ, accumulation 2, AdamW with a
# WarmupCosineLR schedule and gradient_clipping 1.0, at ZeRO 0-3, stage 2
# with CPU optimizer offload and stage 3 with CPU parameter offload; and
# stage 1 in fp16 with DeepSpeed's default dynamic loss scaling (s1-fp16)
# and in fp32 (s1-fp32: rounding too small to part the runs for long);
# stage 1 and 3 with every layer checkpointed (s1-ckpt, s3-ckpt: HF
# gradient_checkpointing, dsc plan --checkpoint-layers); stage 3 with the
# optimizer state on NVMe (s3-nvme) and with the parameters there too
# (s3-nvmeparam): dsrun needs --nvme-path for those; and stage 2 with
# Adam adding the decay to the gradient (adam_w_mode false), without bias
# correction, gradients summed across ranks (s2-l2sum), and the same with
# bf16 master weights, gradients and Adam moments (s2-l2sum-bf16m); and
# stage 3 with ZeRO++ hpZ over groups of 2 ranks (s3-hpz), also without
# overlap_comm (s3-hpzsync: reductions on the compute stream beside the
# group's gathers, two communicators at once); and stage 3 with ZeRO++ qwZ,
# int8 weights in every gather (s3-qwz); and MiCS over shard groups of 1
# and 2 ranks (s3-mics1, s3-mics2); and stage 3 in fp16 (s3-fp16) and
# with ZeRO++ qgZ, quantized gradient reduction across nodes (s3-qgz,
# fp16).
#
# VARIANTS names the variants to write (default: all).
#
#   utils/training-plans.sh DSC MODEL.onnx NAME OUTDIR [WORLD [SEQ [STEPS [LR]]]]
#
# LR is the schedule's peak (default 3e-4: at 6e-4 GPT-2 small's loss
# spikes near step 30 in both dsrun and PyTorch, a few steps apart, and the
# two trajectories part for a while; see docs/training.md).
#
# ACCUMULATION sets gradient_accumulation_steps (default 2): at world
# size 1 and accumulation 4 a step reads the samples of world size 2 and
# accumulation 2 (docs/training.md, "Data").
#
# PERSISTENCE sets stage3_param_persistence_threshold (default 1e4, which
# keeps every parameter of the fixture models whole: none is gathered).
#
# NODES (default 1) spreads WORLD ranks over that many nodes of equal size
# (dsc plan --nodes, --gpus-per-node), for dsrun --hostfile.
#
# Writes OUTDIR/NAME-<variant>.bin and .json (the config, which the
# reference reads too).
set -eu
dsc=$1 model=$2 name=$3 out=$4 world=${5:-1} seq=${6:-256} steps=${7:-200}
lr=${8:-3e-4}
mkdir -p "$out"
for variant in ${VARIANTS:-s0 s1 s2 s3 s2-cpu s3-cpuparam s1-fp16 s1-fp32 \
    s1-ckpt s3-ckpt s3-nvme s3-nvmeparam s2-l2sum s2-l2sum-bf16m}; do
  stage=${variant%%-*}; stage=${stage#s}
  opt=none par=none precision='"bf16": {"enabled": true}' ckpt= zpp=
  adam='"type": "AdamW", "params": {'
  case $variant in
    *-bf16m) precision='"bf16": {"enabled": true,
   "bf16_master_weights_and_grads": true, "bf16_optimizer_states": true}' ;;
  esac
  case $variant in
    *-l2sum*) precision="$precision, \"gradient_allreduce_op\": \"sum\""
      adam='"type": "Adam", "params": {"adam_w_mode": false, "bias_correction": false,' ;;
  esac
  case $variant in
    *-cpu) opt=cpu ;;
    *-cpuparam) opt=cpu par=cpu ;;
    *-nvme) opt=nvme ;;
    *-nvmeparam) opt=nvme par=nvme ;;
    *-fp16) precision='"fp16": {"enabled": true}' ;;
    *-fp32) precision='"bf16": {"enabled": false}' ;;
    *-ckpt) ckpt=--checkpoint-layers ;;
    *-hpz) zpp='"zero_hpz_partition_size": 2,' ;;
    *-hpzsync) zpp='"zero_hpz_partition_size": 2, "overlap_comm": false,' ;;
    *-qwz) zpp='"zero_quantized_weights": true,' ;;
    *-mics1) zpp='"mics_shard_size": 1,' ;;
    *-mics2) zpp='"mics_shard_size": 2,' ;;
    *-qgz) precision='"fp16": {"enabled": true}'
      zpp='"zero_quantized_gradients": true,' ;;
  esac
  cfg="$out/$name-$variant.json"
  cat > "$cfg" <<JSON
{"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": ${ACCUMULATION:-2},
 "gradient_clipping": 1.0,
 $precision,
 "zero_optimization": {"stage": $stage, "reduce_bucket_size": 5e6,
   "stage3_prefetch_bucket_size": 5e6, "stage3_param_persistence_threshold": ${PERSISTENCE:-1e4},
   $zpp "offload_optimizer": {"device": "$opt", "nvme_path": "/local_nvme"},
   "offload_param": {"device": "$par", "nvme_path": "/local_nvme"}},
 "optimizer": {$adam
   "lr": $lr, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}},
 "scheduler": {"type": "WarmupCosineLR",
   "params": {"total_num_steps": $steps, "warmup_num_steps": $((steps / 10)),
              "warmup_type": "linear", "cos_min_ratio": 0.1}}}
JSON
  nodes=${NODES:-1}
  [ "$nodes" = 1 ] || ckpt="$ckpt --nodes $nodes --gpus-per-node $((world / nodes))"
  "$dsc" plan "$cfg" "$model" --seq-len "$seq" --world-size "$world" $ckpt \
    -o "$out/$name-$variant.bin" > "$out/$name-$variant.txt"
done
