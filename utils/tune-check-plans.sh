#!/bin/sh
# Writes the plans that check dsc tune's ranking on GPUs (issue 34): the
# config dsc tune picks around CONFIG, and a hand-picked grid of the same
# config at ZeRO 1-3, micro batches 1 to 16 (accumulation making up
# the global batch; a micro batch it does not divide is left out) and
# CPU offload, each planned for GPU and WORLD ranks.
# runtime/bench/time_matrix.sh trains them all and runtime/bench/
# tune_check.py sets the measured order beside the planned one.
#
#   utils/tune-check-plans.sh DSC CONFIG MODEL NAME OUTDIR GPU WORLD SEQ
#
# CONFIG is a JSON ds_config with train_batch_size (or micro batch and
# accumulation) set; NAME names MODELS/NAME for time_matrix.sh. Writes
# OUTDIR/NAME-sSTAGE-<what>-wWORLD.{json,bin,txt}, the tuned one as
# NAME-sSTAGE-tuned-wWORLD, and OUTDIR/tune.txt.
set -eu
dsc=$1 config=$2 model=$3 name=$4 out=$5 gpu=$6 world=$7 seq=$8
mkdir -p "$out"
"$dsc" tune "$config" "$model" --gpu "$gpu" --world-size "$world" \
  --seq-len "$seq" -o "$out/tuned.json" > "$out/tune.txt"
plan() { # JSON NAME [FLAGS]
  cfg=$1 base=$2
  shift 2
  "$dsc" plan "$cfg" "$model" --gpu "$gpu" --world-size "$world" \
    --seq-len "$seq" "$@" -o "$out/$base.bin" > "$out/$base.txt"
}
stage=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["zero_optimization"]["stage"])' "$out/tuned.json")
tuned=$name-s$stage-tuned-w$world
mv "$out/tuned.json" "$out/$tuned.json"
if grep -q 'every layer checkpointed' "$out/tune.txt"; then
  plan "$out/$tuned.json" "$tuned" --checkpoint-layers
else
  plan "$out/$tuned.json" "$tuned"
fi
# The grid: stage micro offload (none, cpu: the optimizer, cpuparam: both).
while read -r stage micro offload; do
  base=$name-s$stage-m$micro
  [ "$offload" = none ] || base=$base-$offload
  base=$base-w$world
  # A micro batch the global batch does not split into: not a row.
  python3 - "$config" "$out/$base.json" "$stage" "$micro" "$offload" "$world" <<'PY' || continue
import json, sys
config, path, stage, micro, offload, world = sys.argv[1:]
c = json.load(open(config))
z = c.setdefault("zero_optimization", {})
batch = c.get("train_batch_size") or (c.get("train_micro_batch_size_per_gpu", 1) *
                                      c.get("gradient_accumulation_steps", 1) * int(world))
if batch % (int(micro) * int(world)):
    sys.exit(1)
c["train_micro_batch_size_per_gpu"] = int(micro)
c["gradient_accumulation_steps"] = batch // (int(micro) * int(world))
z["stage"] = int(stage)
z.setdefault("offload_optimizer", {})["device"] = "cpu" if offload != "none" else "none"
z.setdefault("offload_param", {})["device"] = "cpu" if offload == "cpuparam" else "none"
json.dump(c, open(path, "w"), indent=1)
PY
  plan "$out/$base.json" "$base"
done <<ROWS
1 1 none
1 2 none
1 4 none
2 1 none
2 2 none
2 4 none
2 16 none
3 1 none
3 2 none
3 4 none
3 8 none
2 2 cpu
2 4 cpu
3 2 cpuparam
3 4 cpuparam
ROWS
