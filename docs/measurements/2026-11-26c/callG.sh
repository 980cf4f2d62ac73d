# GPU call G (2 H200s): the speed comparison of issue 15 after this
# session's changes. GPT-2 small at 16 x 1024 beside PyTorch DDP, FSDP2
# and compiled FSDP2 (speed_compare.sh); GPT-2 XL at 4 x 1024, ZeRO 2, 3
# and 2 with overlap_comm (its peers: call H), with a kernel profile and a
# trace of the last; the Llama 1.1 B at ZeRO 3 and raw NCCL at its
# gathers' sizes (dsrun-bench --plan).
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S
B=$PWD/build-gpu/bin P=build-gpu/sp2 R=/tmp/r
mkdir -p $R
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
python3 runtime/bench/hf_model.py gpt2-small /tmp/models/gpt2-small --no-onnx > /tmp/w1.log 2>&1
(nice -n 10 python3 runtime/bench/hf_model.py gpt2-xl /tmp/models/gpt2-xl --no-onnx > /tmp/w2.log 2>&1;
 nice -n 10 python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/w3.log 2>&1) &
timeout 400 runtime/bench/speed_compare.sh $B/dsrun $P /tmp/models /tmp/tokens.bin $R/speed 2 gpt2-small 16 1024 s1 s2 s1-overlap > $OUT/speed-gpt2-small.txt 2>&1
echo "== gpt2-small compare after $SECONDS s" >> $S; cat $OUT/speed-gpt2-small.txt >> $S
wait
for v in s2 s3 s2-overlap; do
  p=gpt2-xl-speed-$v
  timeout 90 $B/dsrun -n 2 $P/$p.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-xl/model.safetensors --steps 12 --json $R/gpt2-xl-$v-w2.json > $R/gpt2-xl-$v-w2.log 2>&1
  echo "== $p exit $?: $(grep -E 'lean steps' $R/gpt2-xl-$v-w2.log | cut -c60-160)" >> $S
  grep -E "^dsrun: step 3:|rank 0 device memory" $R/gpt2-xl-$v-w2.log | cut -c1-330 >> $S
done
timeout 60 $B/dsrun -n 2 $P/gpt2-xl-speed-s2-overlap.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-xl/model.safetensors \
  --steps 6 --profile-step 5 --trace $R/trace-xl-s2-overlap.json > $R/xl-profile.log 2>&1; echo "== xl profile exit $?" >> $S
grep -A24 "kernel profile" $R/xl-profile.log | grep -v "^  [0-9]" | cut -c1-120 >> $S
timeout 90 $B/dsrun -n 2 $P/llama-1b-speed-s3.bin --data /tmp/tokens.bin --init /tmp/models/llama-1b/model.safetensors --steps 12 --json $R/llama-1b-s3-w2.json > $R/llama-1b-s3-w2.log 2>&1
echo "== llama-1b-speed-s3 exit $?: $(grep -E 'lean steps' $R/llama-1b-s3-w2.log | cut -c60-160)" >> $S
grep -E "^dsrun: step 3:|rank 0 device memory" $R/llama-1b-s3-w2.log | cut -c1-400 >> $S
timeout 120 $B/dsrun-bench -n 2 --plan $P/llama-1b-speed-s3.bin > $R/bench-llama-s3.txt 2>&1; echo "== bench exit $?" >> $S
grep -i -E "plan|gather" $R/bench-llama-s3.txt | head -20 >> $S
cd $R && tar czf $OUT/results.tgz --exclude='*.safetensors' . 
echo "== end after $SECONDS s" >> $S
