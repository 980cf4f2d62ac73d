#!/bin/sh
# dsrun --hostfile on one machine treated as 2 nodes (ctest -L gpu:
# gpu-hostfile): the hostfile names this machine twice, localhost and
# 127.0.0.1, each node on its own GPUs, and NCCL sees two hosts
# (NCCL_HOSTID), so traffic between the nodes takes its network transport.
#   1. The 2-node launch trains; its losses are compared with dsrun -n's
#      over the same ranks (--deterministic): printed, bit for bit or the
#      largest relative difference, which must stay below 1e-3 (NCCL may
#      sum across nodes in another order than within one).
#   2. A rank killed with SIGKILL stops every node: the launcher exits
#      non-zero within 60 s and no rank is left.
#   3. SIGTERM to the launcher stops the job at a step boundary: every
#      node exits 75, and so does the launcher.
# Exits 1 when one fails.
#
#   runtime/test/hostfile_check.sh DSRUN PLAN.bin INIT TOKENS OUTDIR GPUS_PER_NODE STEPS
set -u
dsrun=$(realpath "$1") plan=$2 init=$3 tokens=$4 out=$5 g=$6 steps=$7
here=$(dirname "$0")
rm -rf "$out"; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
printf 'localhost slots=%s\n127.0.0.1 slots=%s\n' $((2 * g)) $((2 * g)) > "$out/hosts"
first=$(seq -s, 0 $((g - 1))) second=$(seq -s, "$g" $((2 * g - 1)))
hosts="--hostfile $out/hosts --include localhost:$first@127.0.0.1:$second"
train="$plan --data $tokens --init $init --deterministic"
failed=0
fail() { echo "FAILED: $*"; failed=1; }

timeout 300 "$dsrun" -n $((2 * g)) $train --steps "$steps" \
  --json "$out/n.json" > "$out/n.log" 2>&1 || fail "dsrun -n $((2 * g)): $(tail -2 "$out/n.log")"
timeout 300 "$dsrun" $hosts --master-port $((29500 + $$ % 1000)) $train \
  --steps "$steps" --json "$out/nodes.json" > "$out/nodes.log" 2>&1 ||
  fail "dsrun --hostfile: $(tail -3 "$out/nodes.log")"
python3 "$here/../bench/node_losses.py" "$out/n.json" "$out/nodes.json" \
  "$steps" 1e-3 || failed=1

# A rank killed: every node stops.
"$dsrun" $hosts --master-port $((30500 + $$ % 1000)) $train --steps 100000 \
  > "$out/killed.log" 2>&1 &
launcher=$!
sleep 15
victim=
for agent in $(pgrep -P $launcher); do
  victim=$(pgrep -P "$agent" | tail -1)
done
if [ -z "$victim" ]; then
  fail "no rank to kill: $(tail -3 "$out/killed.log")"
  kill -9 $launcher 2> /dev/null
else
  start=$(date +%s)
  kill -9 "$victim"
  wait $launcher
  status=$? took=$(($(date +%s) - start))
  left=$(pgrep -f "^$dsrun " | wc -l)
  if [ $status != 0 ] && [ $took -le 60 ] && [ "$left" = 0 ]; then
    echo "passed: a rank killed: the launcher exited $status after $took s, no rank left"
  else
    fail "a rank killed: launcher status $status after $took s, $left process(es) left"
    tail -5 "$out/killed.log"
  fi
fi

# SIGTERM to the launcher: each node stops after a step, status 75.
"$dsrun" $hosts --master-port $((31500 + $$ % 1000)) $train --steps 100000 \
  > "$out/term.log" 2>&1 &
launcher=$!
sleep 15
kill -TERM $launcher
wait $launcher
status=$?
stopped=$(grep -c 'SIGTERM: stopping after the step' "$out/term.log")
if [ $status = 75 ]; then
  echo "passed: SIGTERM: the launcher exited 75 ($stopped process(es) told)"
else
  fail "SIGTERM: the launcher exited $status"
  tail -5 "$out/term.log"
fi
exit $failed
