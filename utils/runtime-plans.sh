#!/bin/sh
# Writes plans that exercise every path of dsrun: ZeRO stages 0-3, with
# and without overlap_comm, gradient accumulation, CPU optimizer offload,
# stage-3 CPU and NVMe optimizer and parameter offload, and per-layer
# checkpointing.
#
#   utils/runtime-plans.sh DSC MODEL.onnx WORLD_SIZE SEQ_LEN OUTDIR [BUCKET [DSC OPTIONS...]]
#
# AIO_BUFFER_SIZE sets offload_param.buffer_size (elements): a fetch unit
# read from NVMe must fit one buffer. PRECISION=fp32 plans without bf16
# (default bf16).
#
# Plans are named s<stage>-ov<overlap>-ga<accumulation>-<optimizer
# offload>-<param offload>[-ckpt].bin; those ending -l2 run Adam with the
# decay added to the gradient (adam_w_mode false) and no bias correction,
# and -l2sum also sums the gradients across ranks (gradient_allreduce_op),
# on the device and on the host; those ending -bf16m keep the master
# weights, gradients and moments in bf16.
set -eu
dsc=$1 model=$2 world=$3 seq=$4 out=$5 bucket=${6:-30000}
aio=${AIO_BUFFER_SIZE:-100000000}
precision='"bf16": {"enabled": true},'
[ "${PRECISION:-bf16}" = fp32 ] && precision=''
shift 5; [ $# -gt 0 ] && shift
mkdir -p "$out"
i=0
for stage in 0 1 2 3; do
  for overlap in true false; do
    for ga in 1 2; do
      for opt in none cpu nvme; do
        [ "$stage" = 0 ] && [ "$opt" != none ] && continue
        # Stage 1/2 take nvme for cpu (DeepSpeed does): nothing new there.
        [ "$stage" != 3 ] && [ "$opt" = nvme ] && continue
        for par in none cpu nvme; do
          if [ "$par" != none ] && { [ "$stage" != 3 ] || [ "$opt" = none ]; }; then
            continue
          fi
          cat > "$out/config.json" <<JSON
{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": $ga,
 $precision
 "zero_optimization": {"stage": $stage, "overlap_comm": $overlap,
   "reduce_bucket_size": $bucket, "stage3_param_persistence_threshold": 500,
   "stage3_prefetch_bucket_size": $bucket, "stage3_max_reuse_distance": $bucket,
   "sub_group_size": $((bucket * 2)),
   "offload_optimizer": {"device": "$opt", "nvme_path": "/local_nvme"},
   "offload_param": {"device": "$par", "nvme_path": "/local_nvme", "buffer_size": $aio}},
 "optimizer": {"type": "AdamW", "params": {"lr": 0.001, "weight_decay": 0.01}}}
JSON
          name="s$stage-ov$overlap-ga$ga-$opt-$par"
          extra=""
          if [ $((i % 3)) = 0 ]; then extra="--checkpoint-layers"; name="$name-ckpt"; fi
          "$dsc" plan "$out/config.json" "$model" --world-size "$world" \
            --seq-len "$seq" $extra "$@" -o "$out/$name.bin" > /dev/null
          i=$((i + 1))
        done
      done
    done
  done
done
# Adam's other settings, on the device and the host optimizer paths; and
# bf16 master weights, gradients and moments (-bf16m) on the device; and at
# an even world size ZeRO++ hpZ over groups of 2 ranks (-hpz), gathering
# in the backward and the second micro step from the secondary partition,
# and ZeRO++ qwZ (-qwz), every gather int8, also of parameters copied in
# from the host, and both (-hpz-qwz: the gathers within the group int8
# too).
for variant in s2-ovtrue-ga2-none-none-l2sum s1-ovfalse-ga1-cpu-none-l2sum \
    s3-ovtrue-ga1-cpu-none-l2 s1-ovfalse-ga2-none-none-bf16m \
    s2-ovtrue-ga2-none-none-l2sum-bf16m s3-ovtrue-ga2-none-none-bf16m; do
  stage=${variant%%-*}; stage=${stage#s}
  opt=none; case $variant in *-cpu-*) opt=cpu ;; esac
  overlap=false; case $variant in *-ovtrue-*) overlap=true ;; esac
  op=mean; case $variant in *-l2sum*) op=sum ;; esac
  adam='"type": "AdamW", "params": {"lr": 0.001, "weight_decay": 0.01}'
  case $variant in *-l2*)
    adam='"type": "Adam", "params": {"lr": 0.001, "weight_decay": 0.01,
   "adam_w_mode": false, "bias_correction": false}' ;;
  esac
  mixed=$precision
  case $variant in *-bf16m)
    [ -z "$precision" ] && continue
    mixed='"bf16": {"enabled": true, "bf16_master_weights_and_grads": true,
   "bf16_optimizer_states": true},' ;;
  esac
  cat > "$out/config.json" <<JSON
{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2,
 $mixed "gradient_allreduce_op": "$op",
 "zero_optimization": {"stage": $stage, "overlap_comm": $overlap,
   "reduce_bucket_size": $bucket, "stage3_prefetch_bucket_size": $bucket,
   "sub_group_size": $((bucket * 2)),
   "offload_optimizer": {"device": "$opt"}},
 "optimizer": {$adam}}
JSON
  "$dsc" plan "$out/config.json" "$model" --world-size "$world" \
    --seq-len "$seq" "$@" -o "$out/$variant.bin" > /dev/null
done
# MiCS: shard groups of one rank (each rank keeps whole parameters and
# optimizer state; the world all-reduces the gradients across replicas)
# at any world above 1, and at 4 ranks and more of half the world too;
# with accumulation and overlap_comm (-ovtrue-ga2-), and without.
variants=
[ $((world % 2)) = 0 ] && variants="s3-ovtrue-ga2-none-none-hpz \
  s3-ovfalse-ga1-none-none-hpz-ckpt s3-ovtrue-ga2-none-none-qwz \
  s3-ovfalse-ga1-cpu-cpu-qwz s3-ovtrue-ga2-none-none-hpz-qwz"
shards=
[ "$world" -gt 1 ] && shards=1
[ $((world % 2)) = 0 ] && [ "$world" -ge 4 ] && shards="1 $((world / 2))"
for shard in $shards; do
  variants="$variants s3-ovtrue-ga2-none-none-mics$shard s3-ovfalse-ga1-none-none-mics$shard"
done
# ZeRO++ qgZ at an even world, planned as 2 nodes: fp16 (its kernels
# read gradients as fp16); at 2 ranks its exchange within the node is a
# copy; at 4 and more, also with hpZ groups of the node (whose
# communicator that exchange shares).
[ $((world % 2)) = 0 ] && variants="$variants \
  s3-ovtrue-ga2-none-none-qgz s3-ovfalse-ga1-none-none-qgz-ckpt"
[ $((world % 2)) = 0 ] && [ "$world" -ge 4 ] &&
  variants="$variants s3-ovtrue-ga2-none-none-hpznode-qgz"
for variant in $variants; do
  overlap=false ga=1 extra= zpp='"zero_hpz_partition_size": 2' opt=none
  mixed=$precision where="--world-size $world"
  case $variant in *-ovtrue-*) overlap=true ;; esac
  case $variant in *-ga2-*) ga=2 ;; esac
  case $variant in *-ckpt) extra=--checkpoint-layers ;; esac
  case $variant in
    *-hpz-qwz) zpp="$zpp, \"zero_quantized_weights\": true" ;;
    *-qwz) zpp='"zero_quantized_weights": true' ;;
    *-mics*) zpp="\"mics_shard_size\": ${variant##*-mics}" ;;
    *-qgz*) mixed='"fp16": {"enabled": true},'
      where="--nodes 2 --gpus-per-node $((world / 2))"
      zpp='"zero_quantized_gradients": true'
      case $variant in *-hpznode-*)
        zpp="$zpp, \"zero_hpz_partition_size\": $((world / 2))" ;;
      esac ;;
  esac
  case $variant in *-cpu-cpu-*) opt=cpu ;; esac
  cat > "$out/config.json" <<JSON
{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": $ga,
 $mixed
 "zero_optimization": {"stage": 3, "overlap_comm": $overlap,
   "reduce_bucket_size": $bucket, "stage3_param_persistence_threshold": 500,
   "stage3_prefetch_bucket_size": $bucket, "stage3_max_reuse_distance": $bucket,
   "offload_optimizer": {"device": "$opt"}, "offload_param": {"device": "$opt"},
   $zpp},
 "optimizer": {"type": "AdamW", "params": {"lr": 0.001, "weight_decay": 0.01}}}
JSON
  "$dsc" plan "$out/config.json" "$model" $where \
    --seq-len "$seq" $extra "$@" -o "$out/$variant.bin" > /dev/null
done
rm "$out/config.json"
