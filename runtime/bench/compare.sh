#!/bin/sh
# Runs one plan with dsrun, then the same plan's collectives with
# dsrun-bench: alone back to back (nccl-tests' way), alone one call at a
# time (as dsrun times its own), and beside the plan's GEMMs; prints, per
# collective kind, the bus bandwidth of each and dsrun's share of it. With
# COMPARE_LOGS=DIR every tool's output is kept there. With
# TORCH_PEER=1 the same collectives and GEMMs also run through PyTorch
# (torch_peer.py) and its bandwidth beside the GEMMs is printed too. Given
# --comm-min-ctas N, the calls alone also run with NCCL at that setting
# (column "alone, N CTAs"): raw NCCL at its default and as dsrun runs it.
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
ctas=$(echo "$*" | sed -n 's/.*--comm-min-ctas \([0-9]*\).*/\1/p')
tuned=
if [ -n "$ctas" ]; then
  tuned=$("$bin/dsrun-bench" -n "$n" --plan "$plan" --comm-min-ctas "$ctas" 2>&1) || {
    echo "$tuned" | tail -5; exit 1; }
fi
torch=
if [ -n "${TORCH_PEER:-}" ]; then
  work=$(mktemp)
  "$bin/dsrun-bench" --plan "$plan" --workload "$work" &&
    torch=$(python3 -m torch.distributed.run --nproc-per-node "$n" \
              --master-port 29700 "$(dirname "$0")/torch_peer.py" "$work" 2>&1)
  rm -f "$work"
  echo "$torch" | grep -q "torch beside" ||
    echo "$torch" | tail -5 | sed 's/^/torch_peer: /'
fi
if [ -n "${COMPARE_LOGS:-}" ]; then
  mkdir -p "$COMPARE_LOGS"
  # The plan's directory too: runtime-plans.sh names plans alike per model.
  dir=$(basename "$(cd "$(dirname "$plan")" && pwd)")
  tag=$dir-$(basename "$plan" .bin)$(echo "$*" | tr -c 'a-z0-9\n' '_')
  echo "$run" > "$COMPARE_LOGS/$tag.dsrun.log"
  echo "$alone" > "$COMPARE_LOGS/$tag.bench.log"
  [ -n "$tuned" ] && echo "$tuned" > "$COMPARE_LOGS/$tag.bench-ctas.log"
  [ -n "$torch" ] && echo "$torch" > "$COMPARE_LOGS/$tag.torch.log"
fi
line=$(echo "$run" | grep "step $steps:")
echo "$(basename "$plan" .bin): $(echo "$line" | grep -o 'step [0-9]*: [0-9.]* ms ([^)]*)')"
echo "$run" | grep -o 'step time, mean .*' | sed 's/^/  /'
# Per kind: dsrun, then each peer with dsrun's share of it.
bus() { grep "^  $1 " | sed 's/.*bus \([0-9.]*\).*/\1/'; }
for kind in all-reduce reduce reduce-scatter all-gather; do
  mine=$(echo "$line" | grep -o ", $kind [0-9.]* MiB in [0-9.]* ms (bus [0-9.]*" |
         sed 's/.*bus //')
  raw=$(echo "$alone" | bus "$kind")
  single=$(echo "$alone" | bus "single $kind")
  beside=$(echo "$alone" | bus "beside $kind")
  peer=$(echo "$torch" | bus "torch beside $kind")
  same=$(echo "$tuned" | bus "$kind")
  mib=$(echo "$line" | grep -o ", $kind [0-9.]* MiB" | grep -o '[0-9.]* MiB')
  [ -z "$mine" ] && [ -n "$raw" ] && echo "  $kind: not in dsrun's step line"
  [ -n "$mine" ] && [ -n "$raw" ] &&
    awk -v k="$kind" -v m="$mib" -v a="$mine" -v b="$raw" -v s="${single:-0}" \
        -v c="${beside:-0}" -v t="${peer:-0}" -v u="${same:-0}" -v n="$ctas" '
      function peer(name, x) {
        if (x > 0) printf "  %s %6.1f GB/s %5.1f%%", name, x, 100 * a / x }
      BEGIN {
        printf "  %-15s %12s  dsrun %6.1f GB/s", k, m, a
        peer("alone", b); if (u > 0) peer("alone, " n " CTAs", u)
        peer("one at a time", s)
        peer("beside GEMMs", c); peer("PyTorch beside", t)
        printf "\n" }'
done
echo "$line" | grep -o 'copies in .*' | sed 's/^/  /'
# The same copies alone at the plan's sizes, and with both directions at
# once (as in a step where gradients leave while parameters arrive).
for dir in in out; do
  mine=$(echo "$line" | grep -o "copies in .*" |
         sed -n "s/.* $dir [0-9.]* MiB at \([0-9.]*\) GB\/s.*/\1/p")
  raw=$(echo "$alone" | grep "copies alone" |
        sed -n "s/.* $dir [0-9.]* MiB at \([0-9.]*\) GB\/s.*/\1/p")
  both=$(echo "$alone" | grep "copies both ways" |
         sed -n "s/.* $dir [0-9.]* MiB at \([0-9.]*\) GB\/s.*/\1/p")
  [ -n "$mine" ] && [ -n "$raw" ] &&
    awk -v d="$dir" -v a="$mine" -v b="$raw" -v c="${both:-0}" 'BEGIN {
      if (b <= 0) exit
      printf "  copies %-4s  dsrun %6.1f GB/s  alone %6.1f GB/s %5.1f%%",
             d, a, b, 100 * a / b
      if (c > 0) printf "  both ways %6.1f GB/s %5.1f%%", c, 100 * a / c
      printf "\n" }'
done
exit 0
