# GPU call D (2 H200s), the final form: offloaded gradients that keep their
# type and start the partition's gradients are copied straight into place
# (stage 3 in bf16, fp32 runs); the others go through the two staging
# slots and a host conversion (stage 1/2 in bf16: fp32 on the host).
# 1. --verify on every CPU/NVMe-offload runtime plan, bf16 and fp32
#    (PRECISION=fp32 utils/runtime-plans.sh ...), at world 2 and 1.
# 2. The Llama 1.1 B at world 2, 4 x 256, accumulation 2: ZeRO 2 + CPU
#    optimizer and ZeRO 3 + CPU parameters, synthetic steps, with
#    --calibration-out for the planner's estimate.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S; nproc >> $S
B=$PWD/build-gpu/bin R=/tmp/r
mkdir -p $R /tmp/nvme1 /tmp/nvme2
gunzip build-gpu/t2/*.gz
for w in 2 1; do
  n=0 ok=0
  for p in build-gpu/rp$w/*.bin; do
    l=$R/v$w-$(basename $p .bin).log
    timeout 60 $B/dsrun -n $w $p --verify --steps 2 --timeout 50 --nvme-path /tmp/nvme$w > $l 2>&1
    r=$?; n=$((n + 1)); [ $r = 0 ] && grep -q "match the reference" $l && ok=$((ok + 1)) || echo "$(basename $p) exit $r: $(tail -2 $l)" >> $S
  done
  echo "== verify, world $w: $ok of $n passed (after $SECONDS s)" >> $S
done
for v in s2-cpu s3-cpuparam; do
  timeout 150 $B/dsrun -n 2 build-gpu/t2/$v.bin --compute synthetic --steps 3 --lean-steps 3 --timeout 100 \
    --json $R/$v.jsonl --calibration-out $OUT/cal-$v-w2.yaml > $R/$v.log 2>&1
  echo "== $v exit $? after $SECONDS s" >> $S
  grep -E "host AdamW|step time, mean|lean steps|^dsrun: step 3:" $R/$v.log | cut -c1-420 >> $S
done
cd $R && tar czf $OUT/logs.tgz *.log *.jsonl 2>/dev/null
echo "== end after $SECONDS s" >> $S
