#!/bin/sh
# Writes what `ctest -L gpu` runs on a GPU machine, where dsc is not built
# (runtime/CMakeLists.txt, docs/testing.md):
#   OUT/kernels/  plans of the fixture models and generated ones, every
#                 kernel of which dsrun-kernel-test checks against the host
#                 reference (utils/kernel-test-plans.sh);
#   OUT/w1, OUT/w2  the runtime plans of every ZeRO stage, offload and
#                 accumulation at world 1 and 2, which dsrun --verify checks
#                 bit for bit (utils/runtime-plans.sh);
#   OUT/train/    the PyTorch fixture Llama (test/Compute/Inputs) as a
#                 Hugging Face folder (its config and its weights, from
#                 dsc plan --weights-out), random tokens of its vocabulary,
#                 and plans at ZeRO 1 and 3 that train_compare.sh checks
#                 against PyTorch;
#   OUT/folders/  plans of the fixture Llama and GPT-2 at 2 ranks and the
#                 GPT-2's config, for model_folder_check.sh;
#   OUT/train2/   plans at 2 ranks with Adam's L2 decay, no bias
#                 correction and summed gradients (s2-l2sum), also with
#                 bf16 master weights and moments (s2-l2sum-bf16m), checked
#                 the same way;
#   OUT/nodes/    the fixture Llama at ZeRO 3 for 2 nodes of 1 GPU, which
#                 hostfile_check.sh launches with dsrun --hostfile;
#   OUT/hpz/      the same at 2 nodes of 2 GPUs, plain and with ZeRO++ hpZ
#                 groups of 2, for hpz_check.sh;
#   OUT/mics/, OUT/mics4/  the fixture Llama at ZeRO 3, plain and with
#                 MiCS shard groups of one rank at 2 ranks and of 2 at 4,
#                 200 steps, for
#                 zero3_variant_check.sh;
#   OUT/qwz/      the fixture Llama at ZeRO 3, 2 ranks, plain and with
#                 ZeRO++ qwZ, no parameter persistent (so that every one
#                 is gathered), scheduled for 200 steps, for zero3_variant_check.sh;
#   OUT/qgz/      the same in fp16 at 2 nodes of 2 GPUs, plain and with
#                 ZeRO++ qgZ, for zero3_variant_check.sh;
#   OUT/families/ plans at ZeRO 2, 2 ranks, of each tiny model family of
#                 test/Graph/Inputs/hf-tiny, made from its config.json
#                 alone, and the configs, for hf_families_check.sh.
#
#   utils/gpu-test-plans.sh BUILD_DIR OUT
set -eu
build=$1 out=$2
dsc=$build/bin/dsc
rm -rf "$out" && mkdir -p "$out/train/models/llama-fixture"
utils/kernel-test-plans.sh "$dsc" "$build/test/ComputeInputs" "$out/kernels"
"$build/bin/dsc-modelgen" --arch gpt --layers 3 --hidden 64 --heads 4 \
  --vocab 500 -o "$out/runtime.onnx" > /dev/null
for w in 1 2; do
  utils/runtime-plans.sh "$dsc" "$out/runtime.onnx" $w 16 "$out/w$w"
done
rm "$out/runtime.onnx"
model=$build/test/ComputeInputs/llama-train.dynamo.onnx
ACCUMULATION=1 utils/training-plans.sh "$dsc" "$model" llama-fixture \
  "$out/train" 1 32 30 1e-3 > /dev/null
for v in "$out"/train/llama-fixture-*.bin; do
  case $v in *-s1.bin|*-s3.bin) ;; *) rm "$v" "${v%.bin}.json" ;; esac
done
# Adam with L2 decay, no bias correction, gradients summed: at 2 ranks,
# where the sum differs from the mean; and the same with bf16 master
# weights, gradients and moments.
ACCUMULATION=1 VARIANTS="s2-l2sum s2-l2sum-bf16m" utils/training-plans.sh "$dsc" "$model" \
  llama-fixture "$out/train2" 2 32 30 1e-3 > /dev/null
# Two nodes of one GPU for dsrun --hostfile (hostfile_check.sh).
NODES=2 ACCUMULATION=1 VARIANTS=s3 utils/training-plans.sh "$dsc" "$model" \
  llama-fixture "$out/nodes" 2 32 30 1e-3 > /dev/null
# Two nodes of two GPUs, ZeRO 3 plain and with hpZ (hpz_check.sh); two
# micro steps, so that forward gathers come from the secondary too.
NODES=2 VARIANTS="s3 s3-hpz s3-hpzsync" utils/training-plans.sh "$dsc" "$model" \
  llama-fixture "$out/hpz" 4 32 30 1e-3 > /dev/null
# ZeRO 3 plain and with qwZ's int8 gathers over 200 steps (zero3_variant_check.sh).
PERSISTENCE=0 VARIANTS="s3 s3-qwz" utils/training-plans.sh "$dsc" "$model" llama-fixture \
  "$out/qwz" 2 32 200 1e-3 > /dev/null
# ZeRO 3 plain and with MiCS over shard groups of one rank, 200 steps
# (zero3_variant_check.sh).
PERSISTENCE=0 VARIANTS="s3 s3-mics1" utils/training-plans.sh "$dsc" "$model" llama-fixture \
  "$out/mics" 2 32 200 1e-3 > /dev/null
# The same at 4 ranks with shard groups of 2.
PERSISTENCE=0 VARIANTS="s3 s3-mics2" utils/training-plans.sh "$dsc" "$model" llama-fixture \
  "$out/mics4" 4 32 200 1e-3 > /dev/null
# ZeRO 3 in fp16, plain and with qgZ's quantized reduction, at 2 nodes of
# 2 GPUs (zero3_variant_check.sh).
NODES=2 PERSISTENCE=0 VARIANTS="s3-fp16 s3-qgz" utils/training-plans.sh "$dsc" "$model" \
  llama-fixture "$out/qgz" 4 32 200 1e-3 > /dev/null
# Model folders in and out (model_folder_check.sh): the fixture Llama at
# ZeRO 2 and the fixture GPT-2 (tied embeddings) at ZeRO 3, 2 ranks.
ACCUMULATION=1 VARIANTS=s2 utils/training-plans.sh "$dsc" "$model" llama \
  "$out/folders" 2 32 30 1e-3 > /dev/null
ACCUMULATION=1 VARIANTS=s3 utils/training-plans.sh "$dsc" \
  "$build/test/ComputeInputs/gpt2-train.dynamo.onnx" gpt2 "$out/folders" 2 32 \
  30 1e-3 > /dev/null
rm "$out"/folders/*.txt
for config in test/Graph/Inputs/hf-tiny/*/; do
  family=$(basename "$config")
  ACCUMULATION=1 VARIANTS=s2 utils/training-plans.sh "$dsc" "$config" \
    "$family" "$out/families" 2 32 30 1e-3 > /dev/null
  mkdir -p "$out/families/configs/$family"
  cp "$config/config.json" "$out/families/configs/$family/"
done
rm "$out"/families/*.txt
rm "$out"/train2/*.txt "$out"/nodes/*.txt "$out"/qwz/*.txt "$out"/mics/*.txt "$out"/mics4/*.txt "$out"/qgz/*.txt
rm "$out"/train/*.txt
"$dsc" plan "$out/train/llama-fixture-s1.json" "$model" --seq-len 32 \
  --weights-out "$out/train/models/llama-fixture/model.safetensors" > /dev/null
python3 - "$dsc" "$out/train" <<'PY'
import json, random, struct, sys
out = sys.argv[2]
fixtures = json.load(open("test/Compute/Inputs/pytorch-fixtures.json"))
config = dict(fixtures["models"]["llama-train"]["config"])
config["architectures"] = ["LlamaForCausalLM"]
json.dump(config, open(f"{out}/models/llama-fixture/config.json", "w"), indent=1)
gpt2 = dict(fixtures["models"]["gpt2-train"]["config"])
gpt2["architectures"] = ["GPT2LMHeadModel"]
json.dump(gpt2, open(f"{out}/../folders/gpt2-config.json", "w"), indent=1)
random.seed(0)
ids = [random.randrange(config["vocab_size"]) for _ in range(40 * 33 * 4)]
open(f"{out}/tokens.bin", "wb").write(struct.pack(f"<{len(ids)}H", *ids))
PY
