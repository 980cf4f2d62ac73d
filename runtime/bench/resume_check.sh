#!/bin/sh
# Checks --save and --resume: trains STEPS steps saving a checkpoint every
# EVERY, trains again from the checkpoint of step EVERY, and compares the
# two runs' losses from step EVERY + 1 on and their final weights (both
# must be equal bit for bit); then loads that checkpoint's consolidated
# model.safetensors into transformers and compares its loss on step
# EVERY + 1's samples with dsrun's.
#
#   runtime/bench/resume_check.sh DSRUN PLAN.bin CONFIG.json INIT TOKENS \
#       OUTDIR STEPS EVERY SEQ [PROCESSES]
#
# DSRUN_ARGS adds options to both runs (--nvme-path DIR for NVMe plans).
set -u
dsrun=$1 plan=$2 cfg=$3 init=$4 tokens=$5 out=$6 steps=$7 every=$8 seq=$9
n=${10:-1}
here=$(dirname "$0")
rm -rf "$out"; mkdir -p "$out"
run() { # NAME ARGS...
  name=$1; shift
  NCCL_NVLS_ENABLE=0 timeout 600 "$dsrun" -n "$n" "$plan" --data "$tokens" \
    --init "$init" --steps "$steps" --json "$out/$name.json" \
    --save-weights "$out/$name.safetensors" ${DSRUN_ARGS:-} "$@" \
    > "$out/$name.log" 2>&1 ||
    { echo "$name: dsrun failed"; tail -3 "$out/$name.log"; }
}
run whole --save "$out/ckpt" --save-every "$every"
run resumed --resume "$out/ckpt/global_step$every"
python3 "$here/resumed_losses.py" "$out/whole.json" "$out/resumed.json" "$every"
if cmp -s "$out/whole.safetensors" "$out/resumed.safetensors"; then
  echo "final weights: equal bit for bit"
else
  echo "final weights: DIFFER"
fi
ls "$out/ckpt" | tr '\n' ' '; echo
expect=$(python3 -c "import json,sys; print(next(d['loss'] for d in map(json.loads, open('$out/whole.json')) if d.get('step') == $every + 1 and 'loss' in d))")
python3 "$here/checkpoint_loss.py" "$out/ckpt/global_step$every" \
  --data "$tokens" --ds-config "$cfg" --seq "$seq" --step $((every + 1)) \
  --world "$n" --expect "$expect"
