#!/bin/sh
# Writes the plans of the time matrix (docs/planner.md, "Time"): GPT-2
# small and XL and the Llama 1.1 B of runtime/bench/hf_model.py, from
# their config.json, at 4 x 1024 tokens a GPU, accumulation 1, bf16,
# AdamW, clipping 1.0, DeepSpeed's default buckets, over ZeRO stages,
# CPU optimizer and parameter offload and 1 or 2 ranks, planned for GPU;
# three rows of one sample a micro step over 4 micro steps
# (MODEL-sSTAGE-m1x4-wWORLD), where kernels are short and a step has
# four times the instructions; and GPT-2 small and the Llama at one
# sample on one rank (-m1x1-), which runtime/bench/time_tables.sh
# profiles beside the 4-sample rows to fit each kernel kind's fixed time.
# runtime/bench/time_matrix.sh trains each and prints its lean step
# beside the plan's.
#
#   utils/time-matrix-plans.sh DSC MODELS OUTDIR [GPU [WORLDS]]
#
# MODELS holds gpt2-small/, gpt2-xl/ and llama-1b/ as hf_model.py writes
# them (dsc reads only their config.json).
# WORLDS (default "1 2") keeps the rows of those world sizes.
# HOST_CORES (environment): the GPU machine's cores, shared by its ranks
# (dsc plan --host-threads); unset, dsc's 16 a rank.
# Writes OUTDIR/MODEL-sSTAGE[-OFFLOAD]-wWORLD.{json,bin,txt}.
set -eu
dsc=$1 models=$2 out=$3 gpu=${4:-H200} worlds=${5:-1 2}
mkdir -p "$out"
# model world stage offload (none, cpu: the optimizer, cpuparam: both)
# [micro accumulation] (4 1 unless given)
while read -r model world stage offload micro accum; do
  case " $worlds " in *" $world "*) ;; *) continue ;; esac
  opt=none par=none suffix=
  case $offload in
    cpu) opt=cpu suffix=-cpu ;;
    cpuparam) opt=cpu par=cpu suffix=-cpuparam ;;
  esac
  micro=${micro:-4} accum=${accum:-1}
  [ "$micro" = 4 ] && [ "$accum" = 1 ] || suffix=$suffix-m${micro}x$accum
  name=$model-s$stage$suffix-w$world
  cat > "$out/$name.json" <<JSON
{"train_micro_batch_size_per_gpu": $micro, "gradient_accumulation_steps": $accum,
 "gradient_clipping": 1.0, "bf16": {"enabled": true},
 "zero_optimization": {"stage": $stage,
   "offload_optimizer": {"device": "$opt"}, "offload_param": {"device": "$par"}},
 "optimizer": {"type": "AdamW",
   "params": {"lr": 3e-4, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1}}}
JSON
  threads=
  [ -n "${HOST_CORES:-}" ] &&
    threads="--host-threads $(( HOST_CORES >= world ? HOST_CORES / world : 1 ))"
  "$dsc" plan "$out/$name.json" "$models/$model" --seq-len 1024 --gpu "$gpu" \
    --world-size "$world" $threads -o "$out/$name.bin" > "$out/$name.txt"
done <<ROWS
gpt2-small 1 0 none
gpt2-small 1 1 none
gpt2-small 2 1 none
gpt2-small 2 2 none
gpt2-small 2 3 none
gpt2-small 1 2 cpu
gpt2-small 2 3 cpuparam
gpt2-xl 1 1 none
gpt2-xl 2 2 none
gpt2-xl 2 3 none
llama-1b 1 1 none
llama-1b 1 2 cpu
llama-1b 2 2 none
llama-1b 2 3 none
llama-1b 2 3 cpuparam
gpt2-small 2 1 none 1 4
gpt2-xl 2 2 none 1 4
llama-1b 2 3 none 1 4
gpt2-small 1 1 none 1 1
llama-1b 1 1 none 1 1
ROWS
