#!/bin/sh
# Checks a run resumed from a checkpoint that dsrun-reshard converted to
# another plan: trains STEPS steps under plan A on PROCS_A processes,
# saving at step EVERY; converts that checkpoint to plan B; resumes it
# under B on PROCS_B processes; and compares the losses after EVERY with
# the uninterrupted run's. When B reads the same samples per step as A
# (the same world size, or world x accumulation unchanged), they must
# agree to rounding (not bit for bit: with clipping, the stages sum the
# gradient norm in different orders).
#
#   runtime/bench/reshard_check.sh DSRUN RESHARD A.bin PROCS_A B.bin PROCS_B \
#       INIT TOKENS OUTDIR STEPS EVERY
#
# DSRUN_ARGS adds options to every dsrun run (--nvme-path DIR).
set -u
dsrun=$1 reshard=$2 a=$3 na=$4 b=$5 nb=$6 init=$7 tokens=$8 out=$9
steps=${10} every=${11}
rm -rf "$out"; mkdir -p "$out"
NCCL_NVLS_ENABLE=0 timeout 600 "$dsrun" -n "$na" "$a" --data "$tokens" \
  --init "$init" --steps "$steps" --json "$out/whole.json" \
  --save "$out/ckpt" --save-every "$every" ${DSRUN_ARGS:-} \
  > "$out/whole.log" 2>&1 || { echo "plan A: dsrun failed"; tail -3 "$out/whole.log"; }
"$reshard" "$out/ckpt/global_step$every" "$b" "$out/converted" ||
  { echo "dsrun-reshard failed"; exit 1; }
NCCL_NVLS_ENABLE=0 timeout 600 "$dsrun" -n "$nb" "$b" --data "$tokens" \
  --init "$init" --steps "$steps" --json "$out/resumed.json" \
  --resume "$out/converted" ${DSRUN_ARGS:-} \
  > "$out/resumed.log" 2>&1 || { echo "plan B: dsrun failed"; tail -3 "$out/resumed.log"; }
python3 - "$out/whole.json" "$out/resumed.json" "$every" <<'PY'
import json, sys
def losses(path):
    return {d["step"]: d["loss"] for d in map(json.loads, open(path))
            if d.get("rank", 0) == 0 and "loss" in d}
whole, resumed, every = losses(sys.argv[1]), losses(sys.argv[2]), int(sys.argv[3])
after = [s for s in sorted(whole) if s > every and s in resumed]
same = sum(resumed[s] == whole[s] for s in after)
worst = max((abs(resumed[s] - whole[s]) / abs(whole[s]) for s in after), default=0)
print(f"resumed under the converted plan: {len(after)} steps after {every}, "
      f"{same} losses equal, worst {100 * worst:.4f} %")
PY
grep -m1 "device memory: measured" "$out/resumed.log" | sed 's/^dsrun: //'
