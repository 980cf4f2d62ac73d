#!/bin/sh
# A captured step trains as the issued one (ctest -L gpu: gpu-graph): each
# plan trains STEPS steps with --graph off and with --graph on, both
# --deterministic, and every step's loss and the final weights must be
# equal bit for bit; the run with the graph must say it ran one.
# Prints one line per plan; exits 1 when one differs.
#
#   runtime/test/graph_check.sh DSRUN INIT TOKENS OUTDIR STEPS RANKS:PLAN...
set -u
dsrun=$1 init=$2 tokens=$3 out=$4 steps=$5
shift 5
rm -rf "$out"; mkdir -p "$out"
failed=0
for run in "$@"; do
  n=${run%%:*} plan=${run#*:}
  name=$(basename "$plan" .bin)-w$n
  for graph in off on; do
    "$dsrun" -n "$n" "$plan" --data "$tokens" --init "$init" \
      --steps "$steps" --deterministic --graph "$graph" \
      --json "$out/$name-$graph.json" \
      --save-weights "$out/$name-$graph.safetensors" \
      > "$out/$name-$graph.log" 2>&1 ||
      { echo "FAILED: $name --graph $graph exited $?"; tail -3 "$out/$name-$graph.log"; failed=1; }
  done
  losses() { grep -o '"rank":0,"step":[0-9]*,"loss":[^,]*' "$1"; }
  if ! grep -q "as one CUDA graph" "$out/$name-on.log"; then
    echo "FAILED: $name: --graph on ran no graph"; failed=1
  elif [ "$(losses "$out/$name-off.json")" != "$(losses "$out/$name-on.json")" ] ||
       [ -z "$(losses "$out/$name-on.json")" ]; then
    echo "FAILED: $name: the losses differ with the graph"; failed=1
  elif ! cmp -s "$out/$name-off.safetensors" "$out/$name-on.safetensors"; then
    echo "FAILED: $name: the final weights differ with the graph"; failed=1
  else
    echo "passed: $name, $(losses "$out/$name-on.json" | wc -l) losses and the weights equal; $(grep -m1 -o 'lean steps.*' "$out/$name-on.log")"
  fi
done
exit $failed
