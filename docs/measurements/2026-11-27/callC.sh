# GPU call C (2 H200s): the Llama 1.1 B at 4 x 1024, accumulation 1, with
# overlap_comm on (two bucket buffers, reductions on their own stream):
# ZeRO 2 + CPU optimizer and ZeRO 3 + CPU parameters, call A's binary and
# plans (dsrun-slots: gradients through the pinned slots, converted on the
# host) beside call B's (straight into the host partition, converted on
# the device), synthetic steps, a trace of each last timed step.
# Configs: training-plans.sh's with "overlap_comm": true added.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S; nproc >> $S
B=$PWD/build-gpu/bin R=/tmp/r
mkdir -p $R
gunzip build-gpu/po/*.gz
for v in s2-cpu s3-cpuparam; do
  for k in slots new; do
    bin=$B/dsrun; [ $k = slots ] && bin=$B/dsrun-slots
    extra=; [ $k = new ] && extra="--calibration-out $OUT/cal-$v-ov.yaml"
    timeout 150 $bin -n 2 build-gpu/po/$k-$v.bin --compute synthetic --steps 3 --lean-steps 3 --timeout 100 \
      --json $R/$k-$v.jsonl --trace $R/trace-$k-$v.json $extra > $R/$k-$v.log 2>&1
    echo "== $k $v exit $? after $SECONDS s" >> $S
    grep -E "host AdamW|step time, mean|lean steps|^dsrun: step 3:" $R/$k-$v.log | cut -c1-420 >> $S
  done
done
cd $R && tar czf $OUT/logs.tgz *.log *.jsonl trace-*.json 2>/dev/null
echo "== end after $SECONDS s" >> $S
