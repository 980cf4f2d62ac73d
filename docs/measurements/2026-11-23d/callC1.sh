# GPU call C1 (2 x H200): the loss gradient divided by accumulation x
# world size (each rank's gradient pre-divided, as DeepSpeed does), the
# optimizer no longer dividing. GPT-2 small fp16 at 2 GPUs against
# PyTorch; bf16 ZeRO 0 must equal call A1's losses (dividing by 2 is
# exact); Llama tiny ZeRO 3 and GPT-2 small ZeRO 2 against PyTorch.
cd $1
R=$OUT/r; mkdir -p $R
BIN=build-gpu/rt/bin
export NCCL_NVLS_ENABLE=0
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
for m in gpt2-small llama-tiny; do python3 runtime/bench/hf_model.py $m /tmp/models/$m --no-onnx > $R/weights-$m.log 2>&1 || tail -3 $R/weights-$m.log; done
T=build-gpu/train2 C=/tmp/cmp
timeout 300 runtime/bench/train_compare.sh $BIN/dsrun $T /tmp/models /tmp/tokens.bin $C 2 50 256 \
  gpt2-small-s1-fp16 gpt2-small-s0 gpt2-small-s2 llama-tiny-s3 > $R/cmp.txt 2>&1
cat $R/cmp.txt
cp $C/*.json $C/*.jsonl $R/ 2>/dev/null
python3 -c "
import json
def L(f): return [(d['step'], d['loss']) for d in map(json.loads, filter(str.strip, open(f))) if 'loss' in d and d.get('rank', 0) == 0]
a, b = L('$R/gpt2-small-s0-w2.json'), L('build-gpu/refs/a1/gpt2-small-s0-w2.json')
print('gpt2-small s0 at 2 GPUs vs call A1:', len(a), 'steps', 'identical' if a == b and a else 'differ: ' + str([(x, y) for x, y in zip(a, b) if x != y][:3]))"
grep -E "^dsrun: step [1-8]:" $C/gpt2-small-s1-fp16-w2.log | cut -c1-110
python3 runtime/bench/compare_losses.py $R/gpt2-small-s1-fp16-w2.json $R/gpt2-small-w2-fp16-ref.jsonl | head -14
cd $OUT && tar czf results.tgz r && rm -rf r
