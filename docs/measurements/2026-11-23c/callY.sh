# GPU call Y: where GPT-2 small's 16 x 1024 step goes, kernel by kernel.
cd $1
R=$OUT/r; mkdir -p $R
(cmake -S runtime -B build-rt -DCMAKE_BUILD_TYPE=Release > $R/cmake.log 2>&1 && cmake --build build-rt -j16 > $R/build.log 2>&1) || { tail -30 $R/build.log; cd $OUT && tar czf results.tgz r; exit 1; }
which ncu nsys > $R/tools.txt 2>&1
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > $R/data.log 2>&1
python3 runtime/bench/hf_model.py gpt2-small /tmp/models/gpt2-small --no-onnx > $R/weights.log 2>&1 || tail -3 $R/weights.log
NCCL_NVLS_ENABLE=0 timeout 120 ./build-rt/bin/dsrun build-gpu/speed/gpt2-small-speed-s1.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-small/model.safetensors --steps 12 --profile-step 5 > $R/profile-s1.log 2>&1
echo "exit $?"; grep -E "tokens/s|device memory" $R/profile-s1.log | head -3
cd $OUT && tar czf results.tgz r && rm -rf r
