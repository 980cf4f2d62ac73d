# GPU call B (two GPUs of one host): issue 14's 200-step runs at 2 ranks
# against the PyTorch reference, and a resume from a resharded checkpoint.
#  1. GPT-2 small at ZeRO 0-3, 2 + CPU optimizer, 3 + CPU parameters, 1 in fp16;
#  2. dsrun-reshard: the tiny Llama fixture trained at 2 ranks, ZeRO 3,
#     converted at step 10 to 1 rank ZeRO 1 with accumulation 4 (the same
#     samples per step), and to 2 ranks ZeRO 1 (bit for bit);
#  3. the Llama-structured 1.1 B at ZeRO 0-3, then 2 + CPU optimizer if
#     time is left.
# Plans made here (build-gpu/plans.tgz) from the exports of call A:
#   utils/training-plans.sh build/bin/dsc gpt2-small.onnx gpt2-small t2 2 256 200
#   utils/training-plans.sh build/bin/dsc llama-1b.onnx llama-1b t2 2 256 200 (and t1 at 1)
#   ACCUMULATION=4 utils/training-plans.sh build/bin/dsc llama-train.dynamo.onnx llama-fixture trainw1a4 1 64 20
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S; nproc >> $S
B=$PWD/build-gpu/bin
mkdir -p /tmp/plans && tar xzf build-gpu/plans.tgz -C /tmp/plans
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
python3 runtime/bench/hf_model.py gpt2-small /tmp/models/gpt2-small --no-onnx > /tmp/w-gpt2.log 2>&1
(python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/w-llama.log 2>&1; echo "llama weights after $SECONDS s" > /tmp/w-done) &
C=/tmp/cmp
echo "== GPT-2 small, 2 GPUs, 200 steps (from $SECONDS s)" >> $S
MASTER_PORT=31000 timeout 260 runtime/bench/train_compare.sh $B/dsrun /tmp/plans/t2 /tmp/models /tmp/tokens.bin $C 2 200 256 \
  gpt2-small-s0 gpt2-small-s1 gpt2-small-s2 gpt2-small-s3 gpt2-small-s2-cpu gpt2-small-s3-cpuparam gpt2-small-s1-fp16 >> $S 2>&1
echo "== reshard (from $SECONDS s)" >> $S
F=build-gpu/train
MASTER_PORT=31100 timeout 60 runtime/bench/reshard_check.sh $B/dsrun $B/dsrun-reshard $F/llama-fixture-s3.bin 2 \
  /tmp/plans/trainw1a4/llama-fixture-s1.bin 1 build-gpu/llama-fixture/model.safetensors build-gpu/tokens.bin /tmp/rs1 20 10 >> $S 2>&1
MASTER_PORT=31200 timeout 60 runtime/bench/reshard_check.sh $B/dsrun $B/dsrun-reshard $F/llama-fixture-s3.bin 2 \
  $F/llama-fixture-s1.bin 2 build-gpu/llama-fixture/model.safetensors build-gpu/tokens.bin /tmp/rs2 20 10 >> $S 2>&1
wait; cat /tmp/w-done >> $S
echo "== Llama 1.1 B, 2 GPUs, 200 steps (from $SECONDS s)" >> $S
MASTER_PORT=31300 timeout $((560 - SECONDS)) runtime/bench/train_compare.sh $B/dsrun /tmp/plans/t2 /tmp/models /tmp/tokens.bin $C 2 200 256 \
  llama-1b-s0 llama-1b-s1 llama-1b-s2 llama-1b-s3 >> $S 2>&1
# The CPU optimizer only if it can finish here (else call C runs it).
[ $SECONDS -lt 400 ] && MASTER_PORT=31400 timeout $((580 - SECONDS)) runtime/bench/train_compare.sh $B/dsrun /tmp/plans/t2 /tmp/models /tmp/tokens.bin $C 2 200 256 \
  llama-1b-s2-cpu >> $S 2>&1
echo "== end after $SECONDS s" >> $S
cd /tmp && tar czf $OUT/logs.tgz cmp/*.json cmp/*.jsonl cmp/*.log rs1/*.json rs1/*.log rs2/*.json rs2/*.log 2>/dev/null
