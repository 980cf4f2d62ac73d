#!/bin/sh
# Measures this GPU kind's time table, the kernel times dsc plan uses
# without a calibration run (include/dsc/Plan/TimeTables.h):
#   - products: dsrun-gemm-bench --grid (bf16, three layouts, m, n and k
#     from 128 to 32768);
#   - attention: dsrun-attention-bench --grid (cuDNN's and dsrun's flash,
#     head sizes 64, 128 and 256, causal and not, sequences 256-8192);
#   - the other kernel kinds: dsrun --calibration-out of each training
#     run given; the gaps between kernels and between instructions: a
#     profiled step of the same plans, run again without the calibration's
#     timing;
#   - NCCL's collectives: dsrun-bench --grid at 2, 4 and 8 ranks, as many
#     as the machine's GPUs allow.
# Writes the table to OUT (lib/Plan/TimeTables/GPU.yaml), GPU the preset's
# name (H200, H100-80GB); an OUT already there keeps its sharing figures
# (how compute and collectives slow each other, from multi-GPU profiles),
# and its collectives of the rank counts this machine cannot run.
#
#   runtime/bench/time_tables.sh BUILD GPU OUT.yaml [PLAN INIT TOKENS]...
#
# TIME_TABLES_LOGS=DIR (environment) keeps the benches' and runs' output
# there.
set -eu
build=$1 gpu=$2 out=$3
shift 3
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/bin/dsrun-gemm-bench" --grid --reps 5 > "$tmp/products.yaml"
"$build/bin/dsrun-attention-bench" --grid --reps 10 > "$tmp/attention.yaml" \
  2> "$tmp/attention.log"
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
grids=
for ranks in 2 4 8; do
  [ "$gpus" -ge $ranks ] || break
  NCCL_NVLS_ENABLE=0 "$build/bin/dsrun-bench" -n $ranks --grid > "$tmp/collectives-$ranks.yaml"
  grids="$grids --collectives $tmp/collectives-$ranks.yaml"
done
n=0 runs=
while [ $# -ge 3 ]; do
  n=$((n + 1))
  "$build/bin/dsrun" "$1" --init "$2" --data "$3" --steps 8 \
    --calibration-out "$tmp/calibration-$n.yaml" > "$tmp/calibrate-$n.log" 2>&1 &&
  "$build/bin/dsrun" "$1" --init "$2" --data "$3" --steps 12 --profile-step 10 \
    > "$tmp/run-$n.log" 2>&1 ||
    { echo "time_tables.sh: dsrun $1 failed:" >&2; tail -3 "$tmp/calibrate-$n.log" "$tmp/run-$n.log" >&2; exit 1; }
  runs="$runs --calibration $tmp/calibration-$n.yaml:$tmp/run-$n.log:$(basename "$1" .bin)"
  shift 3
done
# An OUT already there passes on its sharing figures (and collectives).
[ -f "$out" ] && cp "$out" "$tmp/old.yaml" || : > "$tmp/old.yaml"
# The table replaces OUT only once it is whole.
python3 "$here/time_table.py" --gpu "$gpu" --products "$tmp/products.yaml" \
  --attention "$tmp/attention.yaml" --library-log "$tmp/attention.log" \
  $runs $grids --keep-multi-gpu "$tmp/old.yaml" > "$tmp/table.yaml"
mv "$tmp/table.yaml" "$out"
echo "wrote $out"
if [ -n "${TIME_TABLES_LOGS:-}" ]; then
  mkdir -p "$TIME_TABLES_LOGS" && cp "$tmp"/* "$TIME_TABLES_LOGS"
fi
