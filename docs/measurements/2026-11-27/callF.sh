# GPU call F (one H200): the host AdamW with the bf16 copy in its pass,
# its fp32-gradient loop vectorized again (call E's build ran it scalar:
# the step's factors were reloaded every element). --verify on the
# runtime plans whose parameters stay on the device (the fused path), and
# the Llama 1.1 B's ZeRO 2 + CPU optimizer plan at world 1, synthetic
# steps, call D's binary (dsrun-unfused) beside the new one, twice each.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S; nproc >> $S
B=$PWD/build-gpu/bin R=/tmp/r
mkdir -p $R /tmp/nvme1
gunzip build-gpu/t1/*.gz
n=0 ok=0
for p in build-gpu/rp1/*.bin; do
  l=$R/v1-$(basename $p .bin).log
  timeout 60 $B/dsrun $p --verify --steps 2 --timeout 50 --nvme-path /tmp/nvme1 > $l 2>&1
  r=$?; n=$((n + 1)); [ $r = 0 ] && grep -q "match the reference" $l && ok=$((ok + 1)) || echo "$(basename $p) exit $r: $(tail -2 $l)" >> $S
done
echo "== verify, world 1: $ok of $n passed (after $SECONDS s)" >> $S
for k in unfused new unfused new; do
  bin=$B/dsrun; [ $k = unfused ] && bin=$B/dsrun-unfused
  l=$R/$k-w1-$SECONDS.log
  timeout 150 $bin build-gpu/t1/s2-cpu.bin --compute synthetic --steps 3 --lean-steps 3 --timeout 100 > $l 2>&1
  echo "== $k world 1 exit $? after $SECONDS s" >> $S
  grep -E "host AdamW|step time, mean|lean steps|^dsrun: step 3:" $l | cut -c1-300 >> $S
done
cd $R && tar czf $OUT/logs.tgz *.log 2>/dev/null
echo "== end after $SECONDS s" >> $S
