#!/bin/sh
# Plans launched as 2 nodes of 2 GPUs on one 4-GPU machine (this machine
# twice in a hostfile, NCCL's socket transport between the two "nodes":
# runtime/test/hostfile_check.sh), with synthetic compute, one after the
# other: for each, dsrun's measured and planned step, its exposed
# communication, its collectives and its device memory against the plan.
# Each run also writes OUTDIR/NAME.yaml (--calibration-out), whose
# inter_node_rates dsc plan --calibration reads back.
#
#   runtime/bench/hpz_nodes.sh DSRUN OUTDIR STEPS PLAN.bin...
set -u
dsrun=$(realpath "$1") out=$2 steps=$3
shift 3
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
printf 'localhost slots=4\n127.0.0.1 slots=4\n' > "$out/hosts"
port=$((29500 + $$ % 1000))
for plan in "$@"; do
  name=$(basename "$plan" .bin)
  port=$((port + 1))
  timeout 500 "$dsrun" --hostfile "$out/hosts" \
    --include localhost:0,1@127.0.0.1:2,3 --master-port $port "$plan" \
    --compute synthetic --steps "$steps" --calibration-out "$out/$name.yaml" \
    > "$out/$name.log" 2>&1 || echo "$name: FAILED: $(tail -3 "$out/$name.log")"
  echo "== $name"
  grep -h "step time, mean\|rank 0 device memory\|dsrun: step $steps" \
    "$out/$name.log" | head -3
done
