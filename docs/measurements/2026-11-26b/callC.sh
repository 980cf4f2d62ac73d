# GPU call C (call B's two-GPU machine, warm; a fresh one remakes the
# inputs): the rest of issue 14's Llama 1.1 B runs, 200 steps each.
#  - GPU 0: the reference at world 1, ZeRO 2, ZeRO 2 + CPU optimizer;
#  - GPU 1 meanwhile: ZeRO 3 + CPU parameters (both lanes share the host's
#    cores, 16 threads each: their tokens/s are not timings);
#  - then both GPUs: ZeRO 3 + CPU parameters at 2 ranks, and ZeRO 2 + CPU
#    optimizer if call B had no time left for it.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S
B=$PWD/build-gpu/bin C=/tmp/cmp
[ -d /tmp/plans/t1 ] || { mkdir -p /tmp/plans && tar xzf build-gpu/plans.tgz -C /tmp/plans; }
[ -f /tmp/tokens.bin ] || python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
[ -f /tmp/models/llama-1b/model.safetensors ] || python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/w-llama.log 2>&1
mkdir -p $C; echo "inputs ready after $SECONDS s" >> $S
(CUDA_VISIBLE_DEVICES=0 MASTER_PORT=32000 DSRUN_ARGS="--host-threads 16" timeout 420 runtime/bench/train_compare.sh \
   $B/dsrun /tmp/plans/t1 /tmp/models /tmp/tokens.bin $C 1 200 256 llama-1b-s2 llama-1b-s2-cpu > /tmp/lane0.txt 2>&1) &
(CUDA_VISIBLE_DEVICES=1 MASTER_PORT=32100 timeout 420 $B/dsrun -n 1 /tmp/plans/t1/llama-1b-s3-cpuparam.bin --data /tmp/tokens.bin \
   --init /tmp/models/llama-1b/model.safetensors --steps 200 --json $C/llama-1b-s3-cpuparam-w1.json --host-threads 16 \
   > $C/llama-1b-s3-cpuparam-w1.log 2>&1; echo "exit $?" > /tmp/lane1.txt) &
wait
echo "== Llama 1.1 B, 1 GPU, 200 steps (until $SECONDS s)" >> $S
cat /tmp/lane0.txt >> $S
echo "== llama-1b-s3-cpuparam on 1 GPU(s): dsrun $(cat /tmp/lane1.txt)" >> $S
python3 runtime/bench/compare_losses.py $C/llama-1b-s3-cpuparam-w1.json $C/llama-1b-w1-bf16-ref.jsonl | tail -2 >> $S
grep -m1 "device memory: measured" $C/llama-1b-s3-cpuparam-w1.log >> $S
grep -E "^dsrun: step (100|200):" $C/llama-1b-s3-cpuparam-w1.log | cut -c1-200 >> $S
echo "== Llama 1.1 B, 2 GPUs, CPU offload (from $SECONDS s)" >> $S
MASTER_PORT=32200 timeout $((570 - SECONDS)) runtime/bench/train_compare.sh $B/dsrun /tmp/plans/t2 /tmp/models /tmp/tokens.bin $C 2 200 256 \
  llama-1b-s3-cpuparam >> $S 2>&1
[ -f $C/llama-1b-s2-cpu-w2.json ] || MASTER_PORT=32300 timeout $((590 - SECONDS)) runtime/bench/train_compare.sh $B/dsrun /tmp/plans/t2 \
  /tmp/models /tmp/tokens.bin $C 2 200 256 llama-1b-s2-cpu >> $S 2>&1
echo "== end after $SECONDS s" >> $S
cd /tmp && tar czf $OUT/logs.tgz cmp/llama-1b-*w1*.json cmp/llama-1b-*w1*.log cmp/*w1*ref.jsonl cmp/*cpu*w2.json cmp/*cpu*w2.log 2>/dev/null
