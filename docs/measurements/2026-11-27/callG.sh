# GPU call G (2 H200s), the session's final build: the triad runs on both
# ranks at once (after an all-reduce lines them up), as their AdamWs do,
# and counts the AdamW's 16-bit copy; the Llama 1.1 B's ZeRO 2 + CPU
# optimizer and ZeRO 3 + CPU parameters plans at world 2 (4 x 256,
# accumulation 2), synthetic steps, with --calibration-out for the
# planner's estimate.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S; nproc >> $S
B=$PWD/build-gpu/bin R=/tmp/r
mkdir -p $R
gunzip build-gpu/t2/*.gz
for v in s2-cpu s3-cpuparam; do
  timeout 150 $B/dsrun -n 2 build-gpu/t2/$v.bin --compute synthetic --steps 3 --lean-steps 3 --timeout 100 \
    --calibration-out $OUT/cal-$v-w2.yaml > $R/$v.log 2>&1
  echo "== $v exit $? after $SECONDS s" >> $S
  grep -E "host AdamW|step time, mean|lean steps|^dsrun: step 3:" $R/$v.log | cut -c1-420 >> $S
done
echo "== end after $SECONDS s" >> $S
