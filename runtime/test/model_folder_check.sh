#!/bin/sh
# Hugging Face model folders in and out (ctest -L gpu: gpu-model-folder):
# for the fixture Llama (untied) and a tiny GPT-2 (tied embeddings), dsrun
# trains from the folder save_pretrained wrote in shards and from the same
# weights as one file; the losses must be equal bit for bit. The folder
# dsrun then saves in 20 KB shards must load in transformers with no
# missing or unexpected keys, hold the tensors of the one-file save, and
# give dsrun's validation loss. The same run with --save-dtype fp32 saves
# the fp32 master weights, which load in transformers and round to the
# 16-bit ones. Prints one line per check; exits 1 when one fails.
#
#   model_folder_check.sh DSRUN PLANS OUTDIR RANKS STEPS
#   (PLANS: utils/gpu-test-plans.sh's output)
set -u
dsrun=$1 plans=$2 out=$3 n=$4 steps=$5
here=$(dirname "$0")
. "$here/report.sh"
rm -rf "$out"; mkdir -p "$out"
failed=0
python3 "$here/model_folder_check.py" make "$out" \
  "$plans/train/models/llama-fixture" "$plans/folders/gpt2-config.json" ||
  { echo "FAILED: save_pretrained"; exit 1; }
tokens=$plans/train/tokens.bin
for model in llama gpt2; do
  plan=$plans/folders/$model-s2.bin
  [ $model = gpt2 ] && plan=$plans/folders/$model-s3.bin
  single=$plans/train/models/llama-fixture/model.safetensors
  [ $model = gpt2 ] && single=$out/gpt2-single/model.safetensors
  for from in sharded single; do
    init=$out/$model-sharded
    [ $from = single ] && init=$single
    timeout 300 "$dsrun" -n "$n" "$plan" --data "$tokens" --init "$init" \
      --deterministic --steps "$steps" --val-data "$tokens" --eval-batches 1 \
      --json "$out/$model-$from.json" --max-shard-size 20KB \
      --save-weights "$out/$model-$from-saved$([ $from = single ] && echo .safetensors)" \
      > "$out/$model-$from.log" 2>&1 ||
      { echo "FAILED: $model from $from: dsrun exited $?"; tail -3 "$out/$model-$from.log"; failed=1; }
  done
  # The same run saving its fp32 master weights (--save-dtype fp32, through
  # a checkpoint): rounded to bf16 they are the 16-bit weights saved above.
  timeout 300 "$dsrun" -n "$n" "$plan" --data "$tokens" --init "$out/$model-sharded" \
    --deterministic --steps "$steps" --max-shard-size 20KB --save-dtype fp32 \
    --save-weights "$out/$model-fp32-saved" > "$out/$model-fp32.log" 2>&1 ||
    { echo "FAILED: $model --save-dtype fp32: dsrun exited $?"; tail -3 "$out/$model-fp32.log"; failed=1; }
  checked "$model" "$out/$model.masters" python3 "$here/model_folder_check.py" \
    masters "$out/$model-fp32-saved" "$out/$model-sharded-saved"
  if python3 "$here/../bench/resumed_losses.py" "$out/$model-single.json" \
       "$out/$model-sharded.json" 0 > "$out/$model.compare"; then
    echo "passed: $model, --init from shards: $(cat "$out/$model.compare")"
  else
    echo "FAILED: $model, --init from shards: $(cat "$out/$model.compare")"
    failed=1
  fi
  checked "$model" "$out/$model.check" python3 "$here/model_folder_check.py" \
    check "$out/$model-sharded-saved" "$out/$model-single-saved.safetensors" \
    "$tokens" 32 "$(micro_batch "${plan%.bin}.json")" "$n" \
    "$out/$model-sharded.json"
done
exit $failed
