# GPU call E (one GPU): Nsight Compute on the three flash attention
# kernels of GPT-2 XL's plan (4 x 1024, 25 heads of 64, causal), one
# launch each: where the tile loop's time goes (issue, stalls, occupancy).
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S
B=$PWD/build-gpu/bin
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
python3 runtime/bench/hf_model.py gpt2-xl /tmp/models/gpt2-xl --no-onnx > /tmp/w3.log 2>&1
echo "inputs after $SECONDS s" >> $S
for k in flashForward flashBackwardKeys flashBackwardQueries; do
  timeout 150 ncu --clock-control none -k regex:$k -c 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
    --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis \
    $B/dsrun build-gpu/sp/gpt2-xl-speed-s1.bin --data /tmp/tokens.bin \
    --init /tmp/models/gpt2-xl/model.safetensors --steps 1 --timed-steps 1 > $OUT/ncu-$k.txt 2>&1
  echo "== $k exit $? after $SECONDS s" >> $S
done
