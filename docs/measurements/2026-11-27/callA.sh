# GPU call A (2 H200s): offloaded gradients through two pinned staging
# slots (plan format 11: each bucket's copy to the host, then a host
# conversion on the host stream; the next copy runs meanwhile).
# 1. --verify on every CPU/NVMe-offload runtime plan at world 2 and 1
#    (utils/runtime-plans.sh build/bin/dsc build/bin/runtime-plans.onnx W 16).
# 2. The Llama 1.1 B's ZeRO 2 + CPU optimizer and ZeRO 3 + CPU parameters
#    plans (utils/training-plans.sh DSC llama-1b.onnx llama-1b OUT W 256 200),
#    synthetic steps, old (format 10, dsrun-old: one staging buffer,
#    conversion inside the copy) beside new, at world 2 and world 1; the
#    new world-2 runs write --calibration-out for the planner's estimate.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S; nproc >> $S
B=$PWD/build-gpu/bin R=/tmp/r
mkdir -p $R /tmp/nvme /tmp/nvme1
n=0 ok=0
for p in build-gpu/rp2/*.bin; do
  timeout 60 $B/dsrun -n 2 $p --verify --steps 2 --timeout 50 --nvme-path /tmp/nvme > $R/v2-$(basename $p .bin).log 2>&1
  r=$?; n=$((n + 1)); [ $r = 0 ] && grep -q "match the reference" $R/v2-$(basename $p .bin).log && ok=$((ok + 1)) || echo "$(basename $p) exit $r: $(tail -2 $R/v2-$(basename $p .bin).log)" >> $S
done
echo "== verify, world 2: $ok of $n passed (after $SECONDS s)" >> $S
n=0 ok=0
for p in build-gpu/rp1/*.bin; do
  timeout 60 $B/dsrun $p --verify --steps 2 --timeout 50 --nvme-path /tmp/nvme1 > $R/v1-$(basename $p .bin).log 2>&1
  r=$?; n=$((n + 1)); [ $r = 0 ] && grep -q "match the reference" $R/v1-$(basename $p .bin).log && ok=$((ok + 1)) || echo "$(basename $p) exit $r: $(tail -2 $R/v1-$(basename $p .bin).log)" >> $S
done
echo "== verify, world 1: $ok of $n passed (after $SECONDS s)" >> $S
for w in 2 1; do
  for v in s2-cpu s3-cpuparam; do
    for k in old new; do
      bin=$B/dsrun; [ $k = old ] && bin=$B/dsrun-old
      extra=; [ $k = new ] && [ $w = 2 ] && extra="--calibration-out $OUT/cal-$v-w2.yaml"
      [ $v = s2-cpu ] && extra="$extra --trace $R/trace-$k-$v-w$w.json"
      timeout 150 $bin -n $w build-gpu/t$w/$k-$v.bin --compute synthetic --steps 3 --lean-steps 3 --timeout 100 \
        --json $OUT/$k-$v-w$w.jsonl $extra > $R/$k-$v-w$w.log 2>&1
      echo "== $k $v world $w exit $? after $SECONDS s" >> $S
      grep -E "host AdamW|step time, mean|lean steps|^dsrun: step 3:" $R/$k-$v-w$w.log | cut -c1-420 >> $S
    done
  done
done
cd $R && tar czf $OUT/logs.tgz *.log trace-*.json 2>/dev/null
echo "== end after $SECONDS s" >> $S
