#!/bin/sh
# Runs one plan with dsrun, then the same plan's collectives alone with
# dsrun-bench, and prints, per collective kind, the bus bandwidth of each
# and dsrun's share of raw NCCL. With COMPARE_LOGS=DIR both outputs are
# kept there.
#
#   runtime/bench/compare.sh BINDIR PLAN PROCESSES [DSRUN OPTIONS...]
set -u
bin=$1 plan=$2 n=$3
shift 3
steps=3
run=$("$bin/dsrun" -n "$n" "$plan" --steps $steps "$@" 2>&1) || {
  echo "$run" | tail -5; exit 1; }
alone=$("$bin/dsrun-bench" -n "$n" --plan "$plan" 2>&1) || {
  echo "$alone" | tail -5; exit 1; }
if [ -n "${COMPARE_LOGS:-}" ]; then
  mkdir -p "$COMPARE_LOGS"
  tag=$(basename "$plan" .bin)$(echo "$*" | tr -c 'a-z0-9\n' '_')
  echo "$run" > "$COMPARE_LOGS/$tag.dsrun.log"
  echo "$alone" > "$COMPARE_LOGS/$tag.bench.log"
fi
line=$(echo "$run" | grep "step $steps:")
echo "$(basename "$plan" .bin): $(echo "$line" | grep -o 'step [0-9]*: [0-9.]* ms (compute [0-9.]* ms, waiting [0-9.]* ms)')"
for kind in all-reduce reduce reduce-scatter all-gather; do
  mine=$(echo "$line" | grep -o ", $kind [0-9.]* MiB in [0-9.]* ms (bus [0-9.]*" |
         sed 's/.*bus //')
  raw=$(echo "$alone" | grep "^  $kind " | sed 's/.*bus \([0-9.]*\).*/\1/')
  mib=$(echo "$line" | grep -o ", $kind [0-9.]* MiB" | grep -o '[0-9.]* MiB')
  [ -z "$mine" ] && [ -n "$raw" ] && echo "  $kind: not in dsrun's step line"
  [ -n "$mine" ] && [ -n "$raw" ] &&
    awk -v k="$kind" -v a="$mine" -v b="$raw" -v m="$mib" 'BEGIN { if (b > 0)
      printf "  %-15s %12s  dsrun %6.1f GB/s  alone %6.1f GB/s  %5.1f%%\n",
             k, m, a, b, 100 * a / b }'
done
echo "$line" | grep -o 'copies in .*' | sed 's/^/  /'
# The same copies alone, at the plan's sizes.
for dir in in out; do
  mine=$(echo "$line" | grep -o "copies in .*" |
         sed -n "s/.* $dir [0-9.]* MiB at \([0-9.]*\) GB\/s.*/\1/p")
  raw=$(echo "$alone" | grep "copies alone" |
        sed -n "s/.* $dir [0-9.]* MiB at \([0-9.]*\) GB\/s.*/\1/p")
  [ -n "$mine" ] && [ -n "$raw" ] &&
    awk -v d="$dir" -v a="$mine" -v b="$raw" 'BEGIN { if (b > 0)
      printf "  copies %-4s  dsrun %6.1f GB/s  alone %6.1f GB/s  %5.1f%%\n",
             d, a, b, 100 * a / b }'
done
exit 0
