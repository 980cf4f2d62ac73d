#!/bin/sh
# Model families from config.json (ctest -L gpu: gpu-hf-families): for each
# tiny config of test/Graph/Inputs/hf-tiny, transformers builds the model
# and saves it in shards; dsrun trains the plan dsc made from the config
# alone (ZeRO 2, bf16) from that folder, and PyTorch trains the same model
# on the same batches (torch_reference.py): the losses must agree within
# train_compare's 1 %. The folder dsrun saves must load in transformers
# and give dsrun's validation loss. Also leaves each config's dynamo export
# in OUTDIR/exports (test data for test/Graph/hf-exports.test). Prints one
# line per check; exits 1 when one fails.
#
#   hf_families_check.sh DSRUN PLANS OUTDIR RANKS STEPS
#   (PLANS: utils/gpu-test-plans.sh's output)
set -u
dsrun=$1 plans=$2 out=$3 n=$4 steps=$5
here=$(dirname "$0")
bench=$here/../bench
. "$here/report.sh"
rm -rf "$out"; mkdir -p "$out"
python3 "$here/hf_families_check.py" make "$plans/families/configs" "$out" ||
  { echo "FAILED: transformers could not build the families"; exit 1; }
tokens=$plans/train/tokens.bin
failed=0
for dir in "$plans"/families/configs/*/; do
  family=$(basename "$dir")
  plan=$plans/families/$family-s2
  # Gemma 2's soft-capping runs only in eager attention.
  attn=sdpa; [ "$family" = gemma2 ] && attn=eager
  python3 "$bench/torch_reference.py" --model "$out/$family" --data "$tokens" \
    --ds-config "$plan.json" --seq 32 --world "$n" --steps "$steps" \
    --attn $attn --json "$out/$family-ref.jsonl" > "$out/$family-ref.log" 2>&1 ||
    { echo "FAILED: $family: the PyTorch reference"; tail -3 "$out/$family-ref.log"; failed=1; continue; }
  timeout 300 "$dsrun" -n "$n" "$plan.bin" --data "$tokens" \
    --init "$out/$family" --steps "$steps" --val-data "$tokens" \
    --eval-batches 1 --json "$out/$family.json" --max-shard-size 20KB \
    --save-weights "$out/$family-saved" > "$out/$family.log" 2>&1 ||
    { echo "FAILED: $family: dsrun exited $?"; tail -3 "$out/$family.log"; failed=1; continue; }
  if python3 "$bench/compare_losses.py" "$out/$family.json" \
       "$out/$family-ref.jsonl" > "$out/$family.compare"; then
    echo "passed: $family, losses: $(tail -1 "$out/$family.compare")"
  else
    echo "FAILED: $family, losses: $(tail -2 "$out/$family.compare" | tr '\n' ' ')"
    failed=1
  fi
  checked "$family" "$out/$family.check" python3 "$here/hf_families_check.py" \
    check "$out/$family-saved" "$tokens" 32 "$(micro_batch "$plan.json")" "$n" \
    "$out/$family.json"
done
exit $failed
