# GPU call V: activation checkpointing (--checkpoint-layers) run by dsrun:
# losses equal the uncheckpointed run's, memory as planned, the cost in
# speed beside PyTorch's gradient checkpointing; kernel tests after the
# reference executor's arena change.
cd $1
R=$OUT/r; mkdir -p $R
(cmake -S runtime -B build-rt -DCMAKE_BUILD_TYPE=Release > $R/cmake.log 2>&1 && cmake --build build-rt -j16 > $R/build.log 2>&1) || { tail -30 $R/build.log; cd $OUT && tar czf results.tgz r; exit 1; }
timeout 150 ./build-rt/bin/dsrun-kernel-test build-gpu/plans/*.bin > $R/kernels.log 2>&1; echo "kernel test exit $?"; grep -vE "^  ok|^ok" $R/kernels.log | tail -6
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
for m in gpt2-small llama-tiny; do python3 runtime/bench/hf_model.py $m /tmp/models/$m --no-onnx > $R/weights-$m.log 2>&1; done
T=build-gpu/train
timeout 300 sh runtime/bench/train_compare.sh ./build-rt/bin/dsrun $T /tmp/models /tmp/tokens.bin $R 1 50 256 llama-tiny-s1 llama-tiny-s1-ckpt llama-tiny-s3-ckpt gpt2-small-s1 gpt2-small-s1-ckpt gpt2-small-s3-ckpt > $R/compare.txt 2>&1; cat $R/compare.txt
for p in llama-tiny gpt2-small; do
  echo "== $p: dsrun s1-ckpt vs s1, s3-ckpt vs s1 (losses, bit for bit)"
  python3 -c "
import json,sys
def L(f): return [json.loads(l)['loss'] for l in open(f) if l.strip() and 'loss' in json.loads(l)]
a=L('$R/$p-s1-w1.json')
for v in ('s1-ckpt','s3-ckpt'):
    b=L('$R/$p-'+v+'-w1.json'); print(v, len(a), len(b), 'identical' if a==b else 'differ: max %.3g'%max(abs(x-y) for x,y in zip(a,b)))
"
done
S=build-gpu/speed
for p in s1 s1-ckpt; do
  NCCL_NVLS_ENABLE=0 timeout 150 ./build-rt/bin/dsrun $S/gpt2-small-speed-$p.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-small/model.safetensors --steps 12 > $R/speed-$p.log 2>&1
  echo "== dsrun speed $p exit $?"; grep -E "step (12):|device memory" $R/speed-$p.log | cut -c1-220
done
for f in "" --gradient-checkpointing; do
  timeout 150 python3 runtime/bench/torch_train_speed.py --model /tmp/models/gpt2-small --micro 16 --seq 1024 --steps 12 $f 2>&1 | tail -1
done
rm -f $R/*.safetensors
cd $OUT && tar czf results.tgz r && rm -rf r
