# GPU call C3 (2 x H200): overlap_comm on for GPT-2 XL at ZeRO 2 and
# GPT-2 small at ZeRO 1 (DeepSpeed's default is off for stages 1 and 2;
# calls A2/A3 ran with it off): the gradient reduction behind the backward.
cd $1
R=$OUT/r; mkdir -p $R
BIN=build-gpu/rt/bin
export NCCL_NVLS_ENABLE=0
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
python3 runtime/bench/hf_model.py gpt2-small /tmp/models/gpt2-small --no-onnx > $R/w1.log 2>&1 &
python3 runtime/bench/hf_model.py gpt2-xl /tmp/models/gpt2-xl --no-onnx > $R/w2.log 2>&1
wait
for p in gpt2-xl-speed-s2-overlap gpt2-small-speed-s1-overlap; do
  m=${p%%-speed*}
  timeout 90 $BIN/dsrun -n 2 build-gpu/speed6/$p.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors --steps 12 --json $R/$p.json > $R/$p.log 2>&1; echo "== $p exit $?"
  grep -E "^dsrun: step 3:|lean steps|rank 0 device memory" $R/$p.log | cut -c1-330
  python3 runtime/bench/speed_table.py 2 /dev/null $p=$R/$p.json | tail -1
done
cd $OUT && tar czf results.tgz r && rm -rf r
