# GPU call B (2 H200s): offloaded gradients straight into the host
# partition, converted on the device first (as DeepSpeed's .float() before
# its non-blocking copy), for the micro step that starts them; the staging
# slots and host conversions only for a later micro step that adds to them.
# 1. --verify on every CPU/NVMe-offload runtime plan at world 2 and 1.
# 2. The Llama 1.1 B at world 2 (utils/training-plans.sh, 4 x 256,
#    accumulation 2): ZeRO 2 + CPU optimizer and ZeRO 3 + CPU parameters,
#    call A's binary and plans (dsrun-slots: every micro step through the
#    slots) beside the new ones, synthetic steps; the new ones write
#    --calibration-out.
# 3. ZeRO 2 + CPU optimizer at 4 x 1024, accumulation 1 (ACCUMULATION=1
#    utils/training-plans.sh ... 2 1024 200), slots beside new, with a trace
#    of the last timed step (copies beside the backward).
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S; nproc >> $S
B=$PWD/build-gpu/bin R=/tmp/r
mkdir -p $R /tmp/nvme1 /tmp/nvme2
gunzip build-gpu/g1/*.gz build-gpu/t2/*.gz
for w in 2 1; do
  n=0 ok=0
  for p in build-gpu/rp$w/*.bin; do
    l=$R/v$w-$(basename $p .bin).log
    timeout 60 $B/dsrun -n $w $p --verify --steps 2 --timeout 50 --nvme-path /tmp/nvme$w > $l 2>&1
    r=$?; n=$((n + 1)); [ $r = 0 ] && grep -q "match the reference" $l && ok=$((ok + 1)) || echo "$(basename $p) exit $r: $(tail -2 $l)" >> $S
  done
  echo "== verify, world $w: $ok of $n passed (after $SECONDS s)" >> $S
done
run() { # KIND DIR PLAN TAG EXTRA...
  k=$1 d=$2 v=$3 tag=$4; shift 4
  bin=$B/dsrun; [ $k = slots ] && bin=$B/dsrun-slots
  timeout 150 $bin -n 2 build-gpu/$d/$k-$v.bin --compute synthetic --steps 3 --lean-steps 3 --timeout 100 \
    --json $R/$k-$v-$tag.jsonl "$@" > $R/$k-$v-$tag.log 2>&1
  echo "== $k $v $tag exit $? after $SECONDS s" >> $S
  grep -E "host AdamW|step time, mean|lean steps|^dsrun: step 3:" $R/$k-$v-$tag.log | cut -c1-420 >> $S
}
for v in s2-cpu s3-cpuparam; do
  run slots t2 $v ga2
  run new t2 $v ga2 --calibration-out $OUT/cal-$v-w2.yaml
done
run slots g1 s2-cpu ga1-1024 --trace $R/trace-slots-ga1.json
run new g1 s2-cpu ga1-1024 --trace $R/trace-new-ga1.json
cd $R && tar czf $OUT/logs.tgz *.log *.jsonl trace-*.json 2>/dev/null
echo "== end after $SECONDS s" >> $S
