#!/bin/sh
# What a job's end does to a run, on GPUs (ctest -L gpu: gpu-stop):
#   1. SIGTERM to dsrun -n RANKS part way: the ranks agree on a step,
#      save it, exit 75 within --term-timeout; resumed from that
#      checkpoint the run's later losses and final weights equal an
#      uninterrupted run's bit for bit.
#   2. That checkpoint with one byte of rank 1's shard flipped: --resume
#      refuses it, naming the part, and trains no step.
#   3. SIGSTOP of rank 1 part way: the other ranks exit within --timeout
#      (and a few seconds), naming rank 1.
# Prints one line per check; exits 1 when one fails.
#
#   runtime/test/stop_check.sh DSRUN PLAN.bin INIT TOKENS OUTDIR RANKS STEPS
set -u
dsrun=$1 plan=$2 init=$3 tokens=$4 out=$5 n=$6 steps=$7
rm -rf "$out"; mkdir -p "$out"
failed=0
check() { # CONDITION-STATUS TEXT
  if [ "$1" -eq 0 ]; then echo "passed: $2"; else echo "FAILED: $2"; failed=1; fi
}
train() { # NAME ARGS... (in the background; its pid in $pid)
  name=$1; shift
  "$dsrun" -n "$n" "$plan" --data "$tokens" --init "$init" --deterministic \
    --json "$out/$name.json" "$@" > "$out/$name.log" 2>&1 &
  pid=$!
}
# Waits until NAME's log of steps reaches STEP.
reach() { # NAME STEP
  for _ in $(seq 600); do
    last=$(grep -o '"step": *[0-9]*' "$out/$1.json" 2>/dev/null | tail -1 |
           grep -o '[0-9]*$')
    [ "${last:-0}" -ge "$2" ] && return 0
    sleep 0.1
  done
  return 1
}
now() { date +%s.%N; }
minus() { awk "BEGIN { printf \"%.1f\", $1 - $2 }"; }

# 1. Stop and resume.
train whole --steps "$steps" --save-weights "$out/whole.safetensors"
wait $pid; check $? "an uninterrupted run of $steps steps"
train stopped --steps "$steps" --save "$out/ckpt" --term-timeout 60
reach stopped $((steps / 4))
t0=$(now); kill -TERM $pid; wait $pid; rc=$?; t1=$(now)
at=$(sed -n 's/^global_step//p' "$out/ckpt/latest" 2>/dev/null)
[ "$rc" -eq 75 ] && [ -n "$at" ] && [ "$at" -lt "$steps" ]
check $? "SIGTERM: exit $rc after $(minus "$t1" "$t0") s, the checkpoint of step ${at:-none} saved ($(grep -c 'stopped after step' "$out/stopped.log") stop message)"
train resumed --steps "$steps" --resume "$out/ckpt" \
  --save-weights "$out/resumed.safetensors"
wait $pid; check $? "resumed after step ${at:-?}"
said=$(python3 "$(dirname "$0")/../bench/resumed_losses.py" "$out/whole.json" \
  "$out/resumed.json" "${at:-0}")
check $? "$said"
cmp -s "$out/whole.safetensors" "$out/resumed.safetensors"
check $? "final weights of the resumed run equal the uninterrupted run's"

# 2. A flipped byte.
cp -r "$out/ckpt/global_step$at" "$out/flipped"
python3 -c "
import os, sys
p = sys.argv[1]; n = os.path.getsize(p) // 2
with open(p, 'r+b') as f:
    f.seek(n); b = f.read(1); f.seek(n); f.write(bytes([b[0] ^ 1]))
" "$out/flipped/rank1.ckpt"
train damaged --steps "$steps" --resume "$out/flipped"
wait $pid; rc=$?
grep -q "do not match their checksum: the shard is damaged" "$out/damaged.log" &&
  [ "$rc" -ne 0 ] && ! grep -q '"loss"' "$out/damaged.json" 2>/dev/null
check $? "a flipped byte of rank 1's shard refused (exit $rc): $(grep -o "rank 1's [^,]*, bytes [0-9]* to [0-9]*" "$out/damaged.log" | head -1)"

# 3. A rank that stops answering.
timeout=20
train hung --steps 100000 --timeout $timeout
reach hung 20
rank1=$(pgrep -P $pid | sed -n 2p)
t0=$(now); kill -STOP "$rank1"; wait $pid; rc=$?; t1=$(now)
took=$(minus "$t1" "$t0")
grep -q "rank 1 has not been heard from for" "$out/hung.log" && [ "$rc" -ne 0 ] &&
  awk "BEGIN { exit !($took < $timeout + 15) }"
check $? "SIGSTOP of rank 1: the job ended after $took s (--timeout $timeout), exit $rc: $(grep -o -E '(step [0-9]* did not finish|the ranks did not agree).*' "$out/hung.log" | head -1)"
exit $failed
