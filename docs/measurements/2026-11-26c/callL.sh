# GPU call L (2 H200s): two bucket buffers at stage 3 under overlap_comm
# (the backward fills one while the other is reduced). --verify at world 2
# on the stage-3 overlap_comm runtime plans (and one stage-1 and stage-2
# plan); the Llama 1.1 B and GPT-2 XL at ZeRO 3, 4 x 1024, with a trace of
# the Llama's last timed step.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S
B=$PWD/build-gpu/bin P=build-gpu/sp2 R=/tmp/r
mkdir -p $R /tmp/nvme
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
(python3 runtime/bench/hf_model.py gpt2-xl /tmp/models/gpt2-xl --no-onnx > /tmp/w2.log 2>&1) &
(python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/w3.log 2>&1) &
n=0 ok=0
for p in build-gpu/rp2/*.bin; do
  timeout 60 $B/dsrun -n 2 $p --verify --steps 2 --timeout 50 --nvme-path /tmp/nvme > $R/v-$(basename $p .bin).log 2>&1
  r=$?; n=$((n + 1)); [ $r = 0 ] && grep -q "match the reference" $R/v-$(basename $p .bin).log && ok=$((ok + 1)) || echo "$(basename $p) exit $r" >> $S
done
echo "== verify, world 2: $ok of $n passed (after $SECONDS s)" >> $S
wait
p=llama-1b-speed-s3
timeout 90 $B/dsrun -n 2 $P/$p.bin --data /tmp/tokens.bin --init /tmp/models/llama-1b/model.safetensors \
  --steps 12 --trace $R/trace-$p.json --json $R/$p.json > $R/$p.log 2>&1
echo "== $p exit $?: $(grep -E 'lean steps' $R/$p.log | cut -c60-160)" >> $S
grep -E "^dsrun: step 3:|rank 0 device memory" $R/$p.log | cut -c1-400 >> $S
p=gpt2-xl-speed-s3
timeout 90 $B/dsrun -n 2 $P/$p.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-xl/model.safetensors \
  --steps 12 --json $R/$p.json > $R/$p.log 2>&1
echo "== $p exit $?: $(grep -E 'lean steps' $R/$p.log | cut -c60-160)" >> $S
grep -E "^dsrun: step 3:|rank 0 device memory" $R/$p.log | cut -c1-400 >> $S
cd $R && tar czf $OUT/results.tgz --exclude='v-*' . 
echo "== end after $SECONDS s" >> $S
