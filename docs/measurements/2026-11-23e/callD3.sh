# GPU call D3 (one H100): how long the host takes to enqueue a step
# (enqueue_ms) beside the step itself, GPT-2 small and the Llama 1.1 B.
cd $1
R=$OUT/r; mkdir -p $R
BIN=build-gpu/rt/bin
export NCCL_NVLS_ENABLE=0
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
for m in gpt2-small llama-1b; do python3 runtime/bench/hf_model.py $m /tmp/models/$m --no-onnx > $R/weights-$m.log 2>&1 || tail -3 $R/weights-$m.log; done
S=build-gpu/speed7
for p in gpt2-small-speed-s1 llama-1b-speed-s1; do
  m=${p%%-speed*}
  timeout 100 $BIN/dsrun $S/$p.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors --steps 8 --json $R/$p.json > $R/$p.log 2>&1; echo "== $p exit $?"
  grep -E "step [0-9]+:.*lean" $R/$p.log | cut -c1-200
done
cd $OUT && tar czf results.tgz r && rm -rf r
