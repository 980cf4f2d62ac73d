# GPU call K (2 H200s): the Llama 1.1 B at ZeRO 3 with DeepSpeed's default
# stage3_prefetch_bucket_size (5e7) and with 2e8 (llama-1b-speed-s3-prefetch),
# each with a trace of its last timed step; GPT-2 XL at ZeRO 2 with
# overlap_comm as planned before and with call I's gemm_algorithms
# (-algo: dsc plan --calibration with that section alone).
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S
B=$PWD/build-gpu/bin P=build-gpu/sp2 R=/tmp/r
mkdir -p $R
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
(python3 runtime/bench/hf_model.py gpt2-xl /tmp/models/gpt2-xl --no-onnx > /tmp/w2.log 2>&1) &
python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/w3.log 2>&1
echo "llama weights after $SECONDS s" >> $S
for p in llama-1b-speed-s3 llama-1b-speed-s3-prefetch; do
  timeout 90 $B/dsrun -n 2 $P/$p.bin --data /tmp/tokens.bin --init /tmp/models/llama-1b/model.safetensors \
    --steps 12 --trace $R/trace-$p.json --json $R/$p.json > $R/$p.log 2>&1
  echo "== $p exit $?: $(grep -E 'lean steps' $R/$p.log | cut -c60-160)" >> $S
  grep -E "^dsrun: step 3:" $R/$p.log | cut -c1-400 >> $S
done
wait
for k in 1 2; do for p in gpt2-xl-speed-s2-overlap gpt2-xl-speed-s2-overlap-algo; do
  timeout 90 $B/dsrun -n 2 $P/$p.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-xl/model.safetensors \
    --steps 12 --json $R/$p-$k.json > $R/$p-$k.log 2>&1
  echo "== $p run $k exit $?: $(grep -E 'lean steps' $R/$p-$k.log | cut -c60-160)" >> $S
done; done
cd $R && tar czf $OUT/results.tgz .
echo "== end after $SECONDS s" >> $S
