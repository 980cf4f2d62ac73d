# GPU call E1 (2 x H200): GPT-2 small at 16 x 1024 beside PyTorch DDP,
# FSDP2 and compiled FSDP2 after the vectorized norms, column sums and
# flash attention on ldmatrix + cp.async; GPT-2 XL at 4 x 1024, ZeRO 2
# and 3 and ZeRO 2 with overlap_comm, and a kernel profile of the last.
cd $1
R=$OUT/r; mkdir -p $R
BIN=build-gpu/rt/bin
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
python3 runtime/bench/hf_model.py gpt2-small /tmp/models/gpt2-small --no-onnx > $R/w1.log 2>&1
(nice -n 10 python3 runtime/bench/hf_model.py gpt2-xl /tmp/models/gpt2-xl --no-onnx > $R/w2.log 2>&1) &
timeout 420 runtime/bench/speed_compare.sh $BIN/dsrun build-gpu/speed8 /tmp/models /tmp/tokens.bin $R/speed 2 gpt2-small 16 1024 s1 s2 s1-overlap > $R/speed-gpt2.txt 2>&1
cat $R/speed-gpt2.txt
grep -h -E "^dsrun: step 3:|rank 0 device memory" $R/speed/*.log | cut -c1-250
wait
S=build-gpu/speed9
for v in s2 s3 s2-overlap; do
  p=gpt2-xl-speed-$v
  timeout 90 $BIN/dsrun -n 2 $S/$p.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-xl/model.safetensors --steps 12 --json $R/$p.json > $R/$p.log 2>&1; echo "== $p exit $?"
  grep -E "^dsrun: step 3:|rank 0 device memory" $R/$p.log | cut -c1-300
  python3 runtime/bench/speed_table.py 2 /dev/null $p=$R/$p.json | tail -1
done
timeout 60 $BIN/dsrun -n 2 $S/gpt2-xl-speed-s2-overlap.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-xl/model.safetensors --steps 6 --profile-step 5 > $R/xl-profile.log 2>&1; echo "xl profile exit $?"
grep -A20 "kernel profile" $R/xl-profile.log | cut -c1-120
cd $OUT && tar czf results.tgz r && rm -rf r
