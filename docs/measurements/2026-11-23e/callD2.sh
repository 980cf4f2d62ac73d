# GPU call D2 (one H100): column sums 8 columns a thread; kernel test;
# GPT-2 small 30 steps against PyTorch with this build and with the one
# before the session's kernels (A/B, same plan); nsys kernel summary of
# GPT-2 small's speed plan.
cd $1
R=$OUT/r; mkdir -p $R
BIN=build-gpu/rt/bin
export NCCL_NVLS_ENABLE=0
timeout 200 $BIN/dsrun-kernel-test build-gpu/plans/*.bin > $R/kernel-test.log 2>&1; echo "kernel test exit $?"; grep -E "kernels, [1-9]" $R/kernel-test.log | head -8; grep -E "^(layer-norm|rms-norm|attention|reduce)" $R/kernel-test.log
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
for m in gpt2-small llama-tiny; do python3 runtime/bench/hf_model.py $m /tmp/models/$m --no-onnx > $R/weights-$m.log 2>&1 || tail -3 $R/weights-$m.log; done
S=build-gpu/speed7
p=gpt2-small-speed-s1
timeout 100 $BIN/dsrun $S/$p.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-small/model.safetensors --steps 8 --profile-step 6 --json $R/$p.json > $R/$p.log 2>&1; echo "== $p exit $?"
grep -E "step [0-9]+:.*lean|device memory" $R/$p.log | cut -c1-200
grep -A14 "kernel profile" $R/$p.log | cut -c1-120
C=/tmp/cmp
timeout 150 runtime/bench/train_compare.sh $BIN/dsrun build-gpu/train1 /tmp/models /tmp/tokens.bin $C 1 30 256 gpt2-small-s1 > $R/cmp-new.txt 2>&1
cp $C/gpt2-small-s1-w1.json $R/gpt2-small-s1-new.json
timeout 150 runtime/bench/train_compare.sh build-gpu/rt-old/bin/dsrun build-gpu/train1 /tmp/models /tmp/tokens.bin $C 1 30 256 gpt2-small-s1 > $R/cmp-old.txt 2>&1
cp $C/gpt2-small-s1-w1.json $R/gpt2-small-s1-old.json
cp $C/*.jsonl $R/
grep -h -E "steps|tokens" $R/cmp-new.txt $R/cmp-old.txt
if command -v nsys > /dev/null; then
  timeout 120 nsys profile -o /tmp/prof --force-overwrite true $BIN/dsrun $S/$p.bin --data /tmp/tokens.bin --steps 4 > $R/nsys.log 2>&1
  timeout 120 nsys stats --report cuda_gpu_kern_sum --format csv /tmp/prof.nsys-rep > $R/nsys-kern.csv 2>> $R/nsys.log
  head -40 $R/nsys-kern.csv | cut -c1-250
else echo "no nsys"; fi
cd $OUT && tar czf results.tgz r && rm -rf r
