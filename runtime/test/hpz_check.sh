#!/bin/sh
# ZeRO++ hpZ on one 4-GPU machine run as 2 nodes of 2 (ctest -L gpu:
# gpu-hpz; hostfile_check.sh says how the nodes are simulated):
#   1. dsrun --verify at 4 ranks (synthetic data, which --verify checks
#      bit for bit): after the steps, every shard and every unit gathered
#      over all ranks and again within its hpZ group from the secondary
#      partitions matches the host reference.
#   2. The hpZ plans (HPZ.bin and any after STEPS) and the plain ZeRO-3
#      plan of the same config, all launched as 2 nodes with
#      --deterministic: the secondary partition holds copies of what the
#      first gather brought, so the losses must be equal bit for bit.
#   3. Each run's arena within 0.5 % of its plan, or 2 MiB (the
#      allocator's granularity, most of a tiny plan's difference); NCCL's
#      memory over sockets is not a real network's: printed only.
# Exits 1 when one fails.
#
#   runtime/test/hpz_check.sh DSRUN PLAIN.bin HPZ.bin INIT TOKENS OUTDIR STEPS [HPZ.bin...]
set -u
dsrun=$(realpath "$1") plain=$2 hpz=$3 init=$4 tokens=$5 out=$6 steps=$7
shift 7
here=$(dirname "$0")
rm -rf "$out"; mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
printf 'localhost slots=4\n127.0.0.1 slots=4\n' > "$out/hosts"
hosts="--hostfile $out/hosts --include localhost:0,1@127.0.0.1:2,3"
failed=0
fail() { echo "FAILED: $*"; failed=1; }

if timeout 300 "$dsrun" -n 4 "$hpz" --verify --steps 3 \
    > "$out/verify.log" 2>&1; then
  echo "passed: dsrun --verify at 4 ranks, hpZ groups of 2: $(grep -c 'match the reference' "$out/verify.log") rank(s) match"
else
  fail "dsrun --verify: $(tail -3 "$out/verify.log")"
fi

port=$((29500 + $$ % 1000))
i=0
for plan in "$plain" "$hpz" "$@"; do
  run=run$i; i=$((i + 1))
  port=$((port + 1))
  timeout 300 "$dsrun" $hosts --master-port $port "$plan" --data "$tokens" \
    --init "$init" --deterministic --steps "$steps" --json "$out/$run.json" \
    > "$out/$run.log" 2>&1 || fail "$(basename "$plan") over 2 nodes: $(tail -3 "$out/$run.log")"
  memory=$(grep -h "rank 0 device memory" "$out/$run.log" | head -1)
  echo "$(basename "$plan"): ${memory#dsrun: }"
  # The arena: "arena MEASURED (PLANNED)" in MiB.
  echo "$memory" | sed -n 's/.*arena \([0-9.]*\) (\([0-9.]*\)).*/\1 \2/p' |
    awk '{ d = $1 - $2; if (d < 0) d = -d; exit d > 2 && d > 0.005 * $2 }' ||
    fail "$(basename "$plan"): the arena is more than 0.5 % and 2 MiB off its plan"
  [ "$run" = run0 ] && continue
  python3 "$here/../bench/node_losses.py" "$out/run0.json" "$out/$run.json" \
    "$steps" 0 || failed=1
done
exit $failed
