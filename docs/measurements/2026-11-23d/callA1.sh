# GPU call A1 (2 x H200): two-GPU training against PyTorch (issue 14),
# resume at two ranks, and the GPT-2 XL export for the 1.5B speed plans.
cd $1
R=$OUT/r; mkdir -p $R
BIN=build-gpu/rt/bin
if ! ldd $BIN/dsrun | grep -q "not found" && $BIN/dsrun --version > $R/version.txt 2>&1; then
  echo "using the carried binaries: $(cat $R/version.txt | head -1)"
else
  ldd $BIN/dsrun | grep "not found"
  BIN=build-rt/bin
  (cmake -S runtime -B build-rt -DCMAKE_BUILD_TYPE=Release > $R/cmake.log 2>&1 && cmake --build build-rt -j32 > $R/build.log 2>&1) || { tail -30 $R/build.log; exit 1; }
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
for m in gpt2-small llama-tiny; do python3 runtime/bench/hf_model.py $m /tmp/models/$m --no-onnx > $R/weights-$m.log 2>&1 || tail -3 $R/weights-$m.log; done
(nice -n 10 timeout 500 python3 runtime/bench/hf_model.py gpt2-xl /tmp/models/gpt2-xl > $R/xl-export.log 2>&1; cp /tmp/models/gpt2-xl/model.onnx $OUT/gpt2-xl.onnx; ls -la /tmp/models/gpt2-xl >> $R/xl-export.log) &
T=build-gpu/train2 C=/tmp/cmp
timeout 300 runtime/bench/train_compare.sh $BIN/dsrun $T /tmp/models /tmp/tokens.bin $C 2 50 256 \
  gpt2-small-s0 gpt2-small-s1 gpt2-small-s2 gpt2-small-s3 gpt2-small-s2-cpu gpt2-small-s3-cpuparam gpt2-small-s1-fp16 > $R/cmp-gpt2.txt 2>&1
cat $R/cmp-gpt2.txt
timeout 150 runtime/bench/train_compare.sh $BIN/dsrun $T /tmp/models /tmp/tokens.bin $C 2 50 256 \
  llama-tiny-s0 llama-tiny-s1 llama-tiny-s3 llama-tiny-s2-cpu llama-tiny-s3-cpuparam llama-tiny-s3-ckpt > $R/cmp-llama.txt 2>&1
cat $R/cmp-llama.txt
cp $C/*.json $C/*.jsonl $C/*.log $R/ 2>/dev/null
timeout 100 runtime/bench/resume_check.sh $BIN/dsrun $T/gpt2-small-s3.bin $T/gpt2-small-s3.json /tmp/models/gpt2-small/model.safetensors /tmp/tokens.bin /tmp/resume 20 10 256 2 > $R/resume.txt 2>&1
cat $R/resume.txt | tail -6
cp /tmp/resume/*.log $R/ 2>/dev/null; for f in /tmp/resume/*.log; do cp $f $R/resume-$(basename $f); done
wait
tail -3 $R/xl-export.log; ls -la $OUT/gpt2-xl.onnx
cd $OUT && tar czf results.tgz r && rm -rf r
