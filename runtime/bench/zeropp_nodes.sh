#!/bin/sh
# Plans launched as 2 nodes on one machine (this machine twice in a
# hostfile, NCCL's socket transport between the two "nodes":
# runtime/test/hostfile_check.sh), NODE_GPUS GPUs a node (default 2), with
# synthetic compute, one after the other: for each, dsrun's measured and
# planned step, its exposed communication, its collectives and its device
# memory against the plan. Made for ZeRO++ (hpZ, qwZ) against plain
# ZeRO 3 on a slow link. Each run also writes OUTDIR/NAME.yaml
# (--calibration-out), whose inter_node_rates dsc plan --calibration
# reads back.
#
#   runtime/bench/zeropp_nodes.sh DSRUN OUTDIR STEPS PLAN.bin...
set -u
dsrun=$(realpath "$1") out=$2 steps=$3
shift 3
g=${NODE_GPUS:-2}
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0
printf 'localhost slots=%s\n127.0.0.1 slots=%s\n' $((2 * g)) $((2 * g)) > "$out/hosts"
first=$(seq -s, 0 $((g - 1))) second=$(seq -s, "$g" $((2 * g - 1)))
port=$((29500 + $$ % 1000))
for plan in "$@"; do
  name=$(basename "$plan" .bin)
  port=$((port + 1))
  timeout 500 "$dsrun" --hostfile "$out/hosts" \
    --include "localhost:$first@127.0.0.1:$second" --master-port $port "$plan" \
    --compute synthetic --steps "$steps" --calibration-out "$out/$name.yaml" \
    > "$out/$name.log" 2>&1 || echo "$name: FAILED: $(tail -3 "$out/$name.log")"
  echo "== $name"
  grep -h "step time, mean\|rank 0 device memory\|dsrun: step $steps" \
    "$out/$name.log" | head -3
done
