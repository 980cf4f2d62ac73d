#!/bin/sh
# ZeRO++ qwZ at 2 ranks (ctest -L gpu: gpu-qwz):
#   1. ZeRO 3 plain and with qwZ, each trained STEPS steps from the same
#      weights and batches beside the PyTorch reference
#      (train_compare.sh: each within its 1 % of the reference).
#   2. How far qwZ's losses part from plain ZeRO 3's: printed, the
#      largest relative difference over the steps and the mean of the
#      last ten (DeepSpeed reports ZeRO++ converging as ZeRO 3 does).
#      Losses equal to plain's at every step fail: nothing was quantized.
#   3. The qwZ run's arena within 0.5 % of its plan, or 2 MiB.
# Exits 1 when one fails.
#
#   runtime/test/qwz_check.sh DSRUN PLANDIR MODELDIR TOKENS OUTDIR STEPS
set -u
dsrun=$1 plans=$2 models=$3 tokens=$4 out=$5 steps=$6
here=$(dirname "$0")
rm -rf "$out"; mkdir -p "$out"
failed=0
"$here/../bench/train_compare.sh" "$dsrun" "$plans" "$models" "$tokens" \
  "$out" 2 "$steps" 32 llama-fixture-s3 llama-fixture-s3-qwz || failed=1
python3 - "$here/../bench" "$out/llama-fixture-s3-w2.json" \
    "$out/llama-fixture-s3-qwz-w2.json" "$steps" <<'PY' || failed=1
import sys
sys.path.insert(0, sys.argv[1])
from compare_losses import losses
plain, qwz, steps = losses(sys.argv[2]), losses(sys.argv[3]), int(sys.argv[4])
common = [s for s in range(1, steps + 1) if s in plain and s in qwz]
if len(common) != steps:
    print(f"FAILED: qwZ against plain ZeRO 3: {steps - len(common)} steps missing")
    sys.exit(1)
rel = [abs(qwz[s] - plain[s]) / abs(plain[s]) for s in common]
if max(rel) == 0:
    print("FAILED: qwZ's losses equal plain ZeRO 3's at every step: nothing was quantized")
    sys.exit(1)
last = common[-10:]
mean = lambda d: sum(d[s] for s in last) / len(last)
print(f"passed: qwZ against plain ZeRO 3 over {steps} steps: largest relative "
      f"difference {max(rel):.2e} (step {common[rel.index(max(rel))]}), mean "
      f"{sum(rel) / len(rel):.2e}; last 10 steps {mean(plain):.4f} / {mean(qwz):.4f}")
PY
memory=$(grep -h "rank 0 device memory" "$out/llama-fixture-s3-qwz-w2.log" | head -1)
echo "qwZ: ${memory#dsrun: }"
echo "$memory" | sed -n 's/.*arena \([0-9.]*\) (\([0-9.]*\)).*/\1 \2/p' |
  awk '{ d = $1 - $2; if (d < 0) d = -d; exit d > 2 && d > 0.005 * $2 }' ||
  { echo "FAILED: qwZ: the arena is more than 0.5 % and 2 MiB off its plan"; failed=1; }
exit $failed
