#!/bin/sh
# A stage-3 variant (ZeRO++ qwZ and qgZ, MiCS) at WORLD ranks (default 2)
# against plain ZeRO 3 (ctest -L gpu: gpu-qwz, gpu-qgz, gpu-mics,
# gpu-mics-4):
#   0. dsrun --verify of the variant (synthetic data): every rank's state
#      after 3 steps bit for bit as the host reference computes it.
#   1. ZeRO 3 plain and the variant, each trained STEPS steps from the same
#      weights and batches beside the PyTorch reference
#      (train_compare.sh: each within its 1 % of the reference).
#   2. How far the variant's losses part from plain ZeRO 3's: printed, the
#      largest relative difference over the steps and the mean of the
#      last ten. With MUST_DIFFER=1, losses equal to plain's at every step
#      fail (qwZ: nothing was quantized).
#   3. The variant's arena within 0.5 % of its plan, or 2 MiB.
# Exits 1 when one fails.
#
#   runtime/test/zero3_variant_check.sh DSRUN PLANDIR MODELDIR TOKENS OUTDIR STEPS VARIANT MUST_DIFFER [WORLD [BASE]]
#
# PLANDIR holds llama-fixture-BASE.bin (default s3, plain ZeRO 3) and
# llama-fixture-s3-VARIANT.bin. NODES (default 1): the nodes the plans
# were made for (train_compare.sh).
set -u
dsrun=$1 plans=$2 models=$3 tokens=$4 out=$5 steps=$6 variant=$7 differ=$8
w=${9:-2} base=llama-fixture-${10:-s3}
here=$(dirname "$0")
rm -rf "$out"; mkdir -p "$out"
failed=0
if NCCL_NVLS_ENABLE=0 timeout 300 "$dsrun" -n "$w" \
    "$plans/llama-fixture-s3-$variant.bin" --verify --steps 3 \
    > "$out/verify.log" 2>&1; then
  echo "passed: dsrun --verify of $variant at $w ranks: $(grep -c 'match the reference' "$out/verify.log") rank(s) match"
else
  echo "FAILED: dsrun --verify of $variant: $(tail -3 "$out/verify.log")"
  failed=1
fi
"$here/../bench/train_compare.sh" "$dsrun" "$plans" "$models" "$tokens" \
  "$out" "$w" "$steps" 32 "$base" "llama-fixture-s3-$variant" || failed=1
python3 - "$here/../bench" "$out/$base-w$w.json" \
    "$out/llama-fixture-s3-$variant-w$w.json" "$steps" "$variant" "$differ" <<'PY' || failed=1
import sys
sys.path.insert(0, sys.argv[1])
from compare_losses import losses
plain, other, steps = losses(sys.argv[2]), losses(sys.argv[3]), int(sys.argv[4])
name, differ = sys.argv[5], sys.argv[6] == "1"
common = [s for s in range(1, steps + 1) if s in plain and s in other]
if len(common) != steps:
    print(f"FAILED: {name} against plain ZeRO 3: {steps - len(common)} steps missing")
    sys.exit(1)
rel = [abs(other[s] - plain[s]) / abs(plain[s]) for s in common]
if differ and max(rel) == 0:
    print(f"FAILED: {name}'s losses equal plain ZeRO 3's at every step")
    sys.exit(1)
last = common[-10:]
mean = lambda d: sum(d[s] for s in last) / len(last)
print(f"passed: {name} against plain ZeRO 3 over {steps} steps: largest relative "
      f"difference {max(rel):.2e} (step {common[rel.index(max(rel))]}), mean "
      f"{sum(rel) / len(rel):.2e}; last 10 steps {mean(plain):.4f} / {mean(other):.4f}")
PY
memory=$(grep -h "rank 0 device memory" "$out/llama-fixture-s3-$variant-w$w.log" | head -1)
echo "$variant: ${memory#dsrun: }"
echo "$memory" | sed -n 's/.*arena \([0-9.]*\) (\([0-9.]*\)).*/\1 \2/p' |
  awk '{ d = $1 - $2; if (d < 0) d = -d; exit d > 2 && d > 0.005 * $2 }' ||
  { echo "FAILED: $variant: the arena is more than 0.5 % and 2 MiB off its plan"; failed=1; }
exit $failed
