#!/bin/sh
# ZeRO++ hpZ on one 4-GPU machine run as 2 nodes of 2 (ctest -L gpu:
# gpu-hpz; hostfile_check.sh says how the nodes are simulated):
#   1. dsrun --verify at 4 ranks (synthetic data, which --verify checks
#      bit for bit): after the steps, every shard and every unit gathered
#      over all ranks and again within its hpZ group from the secondary
#      partitions matches the host reference.
#   2. The hpZ plan and the plain ZeRO-3 plan of the same config, both
#      launched as 2 nodes with --deterministic: the secondary partition
#      holds copies of what the first gather brought, so the losses must be
#      equal bit for bit.
#   3. Each run's device memory against its plan (dsrun prints both).
# Exits 1 when one fails.
#
#   runtime/test/hpz_check.sh DSRUN PLAIN.bin HPZ.bin INIT TOKENS OUTDIR STEPS
set -u
dsrun=$(realpath "$1") plain=$2 hpz=$3 init=$4 tokens=$5 out=$6 steps=$7
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
for run in plain hpz; do
  eval plan=\$$run
  port=$((port + 1))
  timeout 300 "$dsrun" $hosts --master-port $port "$plan" --data "$tokens" \
    --init "$init" --deterministic --steps "$steps" --json "$out/$run.json" \
    > "$out/$run.log" 2>&1 || fail "$run over 2 nodes: $(tail -3 "$out/$run.log")"
  grep -h "device memory" "$out/$run.log" | head -1 | sed "s/^/$run: /"
done
python3 "$here/../bench/node_losses.py" "$out/plain.json" "$out/hpz.json" \
  "$steps" 0 || failed=1
exit $failed
