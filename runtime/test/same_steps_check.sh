#!/bin/sh
# A run option that must not change training (ctest -L gpu: gpu-graph,
# gpu-comm-zero): each plan trains STEPS steps without FLAGS and with
# them, both --deterministic, and every step's loss and the final weights
# must be equal bit for bit; the run with FLAGS must print SAYS, so that
# an option that quietly did nothing does not pass.
# Prints one line per plan; exits 1 when one differs.
#
#   runtime/test/same_steps_check.sh DSRUN INIT TOKENS OUTDIR STEPS FLAGS SAYS RANKS:PLAN...
#   (FLAGS: "--graph on", SAYS: "as one CUDA graph")
set -u
dsrun=$1 init=$2 tokens=$3 out=$4 steps=$5 flags=$6 says=$7
shift 7
rm -rf "$out"; mkdir -p "$out"
failed=0
for run in "$@"; do
  n=${run%%:*} plan=${run#*:}
  name=$(basename "$plan" .bin)-w$n
  for with in off on; do
    extra=""; [ "$with" = on ] && extra=$flags
    # $extra unquoted: FLAGS is an option and its value.
    "$dsrun" -n "$n" "$plan" --data "$tokens" --init "$init" \
      --steps "$steps" --deterministic $extra \
      --json "$out/$name-$with.json" \
      --save-weights "$out/$name-$with.safetensors" \
      > "$out/$name-$with.log" 2>&1 ||
      { echo "FAILED: $name ($with: $extra) exited $?"; tail -3 "$out/$name-$with.log"; failed=1; }
  done
  losses() { grep -o '"rank":0,"step":[0-9]*,"loss":[^,]*' "$1"; }
  if ! grep -q "$says" "$out/$name-on.log"; then
    echo "FAILED: $name: with $flags, no line says '$says'"; failed=1
  elif [ "$(losses "$out/$name-off.json")" != "$(losses "$out/$name-on.json")" ] ||
       [ -z "$(losses "$out/$name-on.json")" ]; then
    echo "FAILED: $name: the losses differ with $flags"; failed=1
  elif ! cmp -s "$out/$name-off.safetensors" "$out/$name-on.safetensors"; then
    echo "FAILED: $name: the final weights differ with $flags"; failed=1
  else
    echo "passed: $name, $(losses "$out/$name-on.json" | wc -l) losses and the weights equal with $flags; $(grep -m1 -o 'lean steps.*' "$out/$name-on.log")"
  fi
done
exit $failed
