# GPU call B2 (one H100): pointwise programs decoded and dispatched once
# per batch of elements. Kernel test; Llama tiny's losses must equal call
# B1's bit for bit; the Llama 1.1 B's and GPT-2 small's steps.
cd $1
R=$OUT/r; mkdir -p $R
BIN=build-gpu/rt/bin
export NCCL_NVLS_ENABLE=0
$BIN/dsrun-kernel-test build-gpu/plans/*.bin > $R/kernel-test.log 2>&1; echo "kernel test exit $?"; grep -iE "fail" $R/kernel-test.log | grep -v " 0 " | head -5
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
for m in gpt2-small llama-tiny; do python3 runtime/bench/hf_model.py $m /tmp/models/$m --no-onnx > $R/weights-$m.log 2>&1 || tail -3 $R/weights-$m.log; done
python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > $R/weights-llama-1b.log 2>&1 &
for v in s1 s3; do
  timeout 60 $BIN/dsrun build-gpu/train1/llama-tiny-$v.bin --data /tmp/tokens.bin --init /tmp/models/llama-tiny/model.safetensors --steps 50 --json $R/llama-tiny-$v.json > $R/llama-tiny-$v.log 2>&1 || tail -3 $R/llama-tiny-$v.log
done
python3 -c "
import json
def L(f): return [(d['step'], d['loss']) for d in map(json.loads, filter(str.strip, open(f))) if 'loss' in d]
for v in ['s1', 's3']:
    a, b = L('$R/llama-tiny-'+v+'.json'), L('build-gpu/refs/b1/llama-tiny-'+v+'-w1.json')
    print('llama-tiny', v, len(a), 'steps:', 'identical to B1' if a == b and a else 'DIFFER from B1')"
wait
S=build-gpu/speed4
for p in llama-1b-speed-s1 gpt2-small-speed-s1; do
  m=${p%%-speed*}
  timeout 100 $BIN/dsrun $S/$p.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors --steps 8 --profile-step 6 --json $R/$p.json > $R/$p.log 2>&1; echo "== $p exit $?"
  grep -E "lean steps" $R/$p.log | cut -c1-200
  grep -A12 "kernel profile" $R/$p.log | cut -c1-120
done
cd $OUT && tar czf results.tgz r && rm -rf r
