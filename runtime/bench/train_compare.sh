#!/bin/sh
# Trains with dsrun and with the PyTorch reference from the same weights
# and batches, and compares per-step losses (1 % tolerance); exits 1 when
# a plan's losses part further.
#
#   runtime/bench/train_compare.sh DSRUN PLANDIR MODELDIR TOKENS OUTDIR \
#       PROCESSES STEPS SEQ NAME-VARIANT...
#
# PLANDIR holds NAME-VARIANT.bin and .json (utils/training-plans.sh);
# MODELDIR/NAME holds the model from runtime/bench/hf_model.py. The
# reference runs once per NAME and world size. Prints, per plan, the
# comparison, dsrun's and PyTorch's tokens/s and dsrun's memory line.
# DSRUN_ARGS adds options to dsrun (--nvme-path DIR for NVMe plans).
# NODES (default 1): the nodes the plans spread the processes over
# (utils/training-plans.sh's), which ZeRO++ qgZ's reference needs.
set -u
dsrun=$1 plans=$2 models=$3 tokens=$4 out=$5 n=$6 steps=$7 seq=$8
shift 8
here=$(dirname "$0")
mkdir -p "$out"
failed=0
for plan in "$@"; do
  name=${plan%-s[0-9]*}
  # One reference per model, world size, precision and update rule.
  precision=bf16
  case $plan in
    *-fp16) precision=fp16 ;; *-fp32) precision=fp32 ;;
    *-qgz) precision=fp16-qgz ;;
    *-l2sum) precision=bf16-l2sum ;;
    *-l2sum-bf16m) precision=bf16m-l2sum ;;
  esac
  ref=$out/$name-w$n-$precision-ref.jsonl
  if [ ! -f "$ref" ]; then
    python3 "$here/torch_reference.py" --model "$models/$name" \
      --data "$tokens" --ds-config "$plans/$plan.json" --seq "$seq" \
      --world "$n" --gpus-per-node $((n / ${NODES:-1})) --steps "$steps" \
      --json "$ref" > "${ref%.jsonl}.log" 2>&1 ||
      { echo "reference failed:"; tail -5 "${ref%.jsonl}.log"; }
  fi
  log=$out/$plan-w$n.log
  NCCL_NVLS_ENABLE=0 timeout 600 "$dsrun" -n "$n" "$plans/$plan.bin" \
    --data "$tokens" --init "$models/$name/model.safetensors" \
    --steps "$steps" --json "$out/$plan-w$n.json" \
    --save-weights "$out/$plan-w$n.safetensors" ${DSRUN_ARGS:-} > "$log" 2>&1
  echo "== $plan on $n GPU(s): dsrun exit $?"
  grep -m2 -E "error|failed|cannot" "$log"
  python3 "$here/compare_losses.py" "$out/$plan-w$n.json" "$ref" > "$out/$plan-w$n.compare" ||
    failed=1
  tail -2 "$out/$plan-w$n.compare"
  python3 - "$out/$plan-w$n.json" "$ref" <<'PY'
import json, sys
def rate(path, key):
    v = [json.loads(l) for l in open(path) if l.strip()]
    v = [d for d in v if d.get("rank", 0) == 0 and "loss" in d][1:]
    if not v: return 0
    if key == "step_ms":
        return sum(d["tokens"] for d in v) / (sum(d["step_ms"] for d in v) / 1e3)
    return sum(d["tokens_per_s"] for d in v) / len(v)
print(f"tokens/s: dsrun {rate(sys.argv[1], 'step_ms'):.0f}, pytorch {rate(sys.argv[2], 'tokens_per_s'):.0f} (one process)")
PY
  grep -m1 "device memory: measured" "$log" | sed 's/^dsrun: //'
done
exit $failed
