# GPU call B1 (one H100): the strided pointwise kernel (32-bit offsets by
# multiply and shift) and fused pointwise chains. Every kernel of the 17
# test plans against the host reference; Llama tiny's losses against
# PyTorch; the Llama 1.1 B's step with and without fusion (profiles);
# GPT-2 small's step (no chains to fuse: must not move).
cd $1
R=$OUT/r; mkdir -p $R
BIN=build-gpu/rt/bin
export NCCL_NVLS_ENABLE=0
$BIN/dsrun-kernel-test build-gpu/plans/*.bin > $R/kernel-test.log 2>&1; echo "kernel test exit $?"; grep -E "failed|plans" $R/kernel-test.log | grep -v " 0 failed" | head -8; tail -2 $R/kernel-test.log
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
for m in gpt2-small llama-tiny; do python3 runtime/bench/hf_model.py $m /tmp/models/$m --no-onnx > $R/weights-$m.log 2>&1 || tail -3 $R/weights-$m.log; done
python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > $R/weights-llama-1b.log 2>&1 &
timeout 150 runtime/bench/train_compare.sh $BIN/dsrun build-gpu/train1 /tmp/models /tmp/tokens.bin /tmp/cmp 1 50 256 llama-tiny-s1 llama-tiny-s3 > $R/cmp-llama.txt 2>&1; cat $R/cmp-llama.txt
cp /tmp/cmp/*.json /tmp/cmp/*.jsonl $R/ 2>/dev/null
wait
S=build-gpu/speed4
for p in llama-1b-speed-s1 llama-1b-speed-s1-nofuse gpt2-small-speed-s1; do
  m=${p%%-speed*}
  timeout 100 $BIN/dsrun $S/$p.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors --steps 8 --profile-step 6 --json $R/$p.json > $R/$p.log 2>&1; echo "== $p exit $?"
  grep -E "lean steps|device memory" $R/$p.log | cut -c1-200
  grep -A10 "kernel profile" $R/$p.log | cut -c1-120
done
python3 -c "
import json
def L(f): return [(d['step'], round(d['loss'], 4)) for d in map(json.loads, filter(str.strip, open(f))) if 'loss' in d]
print('llama-1b fused vs unfused losses:', L('$R/llama-1b-speed-s1.json'), L('$R/llama-1b-speed-s1-nofuse.json'))"
cd $OUT && tar czf results.tgz r && rm -rf r
