#!/bin/sh
# Trains every plan of PLANDIR (utils/time-matrix-plans.sh) for 12 steps
# and keeps each run's --json log in OUTDIR; runtime/bench/time_matrix.py
# then sets each lean step beside the plan's estimate.
#
#   runtime/bench/time_matrix.sh DSRUN PLANDIR MODELS TOKENS OUTDIR [PATTERN]
#
# PLANDIR/MODEL-sSTAGE[-OFFLOAD]-wWORLD.bin trains on WORLD GPUs from
# MODELS/MODEL/model.safetensors (runtime/bench/hf_model.py).
set -u
dsrun=$1 plans=$2 models=$3 tokens=$4 out=$5 pattern=${6:-*}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
for plan in "$plans"/$pattern.bin; do
  name=$(basename "$plan" .bin)
  model=${name%%-s[0-9]*} world=${name##*-w}
  timeout 300 "$dsrun" -n "$world" "$plan" --data "$tokens" \
    --init "$models/$model/model.safetensors" --steps 12 \
    --json "$out/$name.json" > "$out/$name.log" 2>&1
  echo "$name: exit $?; $(grep -m1 -o 'lean steps.*' "$out/$name.log")"
done
