# GPU call E (2 H200s): the host AdamW writes the updated weights' bf16
# copy into the parameter staging in its own pass (as DeepSpeedCPUAdam's
# adam_update_copy), so the copy back to the device converts nothing.
# 1. --verify on every CPU/NVMe-offload runtime plan, bf16 and fp32, at
#    world 2.
# 2. The Llama 1.1 B's ZeRO 2 + CPU optimizer plan (training-plans.sh, 4 x
#    256, accumulation 2) at world 2 and 1, synthetic steps: call D's
#    binary (dsrun-unfused: the conversion inside the copy; the plans are
#    the same format) beside the new one, on the same plans.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S; nproc >> $S
B=$PWD/build-gpu/bin R=/tmp/r
mkdir -p $R /tmp/nvme2
gunzip build-gpu/t*/*.gz
n=0 ok=0
for p in build-gpu/rp2/*.bin; do
  l=$R/v2-$(basename $p .bin).log
  timeout 60 $B/dsrun -n 2 $p --verify --steps 2 --timeout 50 --nvme-path /tmp/nvme2 > $l 2>&1
  r=$?; n=$((n + 1)); [ $r = 0 ] && grep -q "match the reference" $l && ok=$((ok + 1)) || echo "$(basename $p) exit $r: $(tail -2 $l)" >> $S
done
echo "== verify, world 2: $ok of $n passed (after $SECONDS s)" >> $S
for w in 2 1; do
  for k in unfused new unfused new; do
    bin=$B/dsrun; [ $k = unfused ] && bin=$B/dsrun-unfused
    l=$R/$k-w$w-$SECONDS.log
    timeout 150 $bin -n $w build-gpu/t$w/s2-cpu.bin --compute synthetic --steps 3 --lean-steps 3 --timeout 100 \
      > $l 2>&1
    echo "== $k world $w exit $? after $SECONDS s" >> $S
    grep -E "host AdamW|step time, mean|lean steps" $l | cut -c1-300 >> $S
  done
done
cd $R && tar czf $OUT/logs.tgz *.log 2>/dev/null
echo "== end after $SECONDS s" >> $S
