# GPU call A (two GPUs of one host): the 2-GPU half of issue 18's check,
# and checkpoints of state offloaded to NVMe (issue 14).
#  1. dsrun --verify on the 48 runtime plans at 2 ranks (plan format 9),
#     six plans at a time (each its own port and swap directory: the
#     step times of this call are not timings);
#  2. --save/--resume with the optimizer state, then the parameters too,
#     on NVMe (the tiny Llama export, ZeRO 3, 2 ranks): resumed losses
#     and final weights against the uninterrupted run, and transformers
#     loading the checkpoint;
#  3. those two plans and plain ZeRO 3 against PyTorch for 20 steps.
# Inputs made here (dsrun built here too, without MPI:
#   cmake -S runtime -B build-rt -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON):
#   dsc-modelgen --arch gpt --layers 3 --hidden 64 --heads 4 --vocab 500 -o rp.onnx
#   utils/runtime-plans.sh build/bin/dsc rp.onnx 2 16 build-gpu/rp2
#   utils/training-plans.sh build/bin/dsc llama-train.dynamo.onnx llama-fixture build-gpu/train 2 64 20
#   dsc plan ... --weights-out build-gpu/llama-fixture/model.safetensors (+ the fixture's config.json)
#   build-gpu/tokens.bin: this repository's ASCII text, one token per byte
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $S
D=$PWD/build-gpu/bin/dsrun
if ldd $D | grep -q "not found"; then
  echo "carried dsrun lacks libraries; building" >> $S
  cmake -S runtime -B /tmp/rt -DCMAKE_BUILD_TYPE=Release > /tmp/rt.log 2>&1 &&
    cmake --build /tmp/rt -j30 --target dsrun >> /tmp/rt.log 2>&1
  D=/tmp/rt/bin/dsrun
fi
L=/tmp/v; mkdir -p $L
lane() {
  k=$1 i=0
  mkdir -p /tmp/nvme$k
  for p in build-gpu/rp2/*.bin; do
    if [ $((i % 6)) = $k ]; then
      n=$(basename $p .bin)
      MASTER_PORT=$((30000 + 100 * k + i)) timeout 100 $D -n 2 $p --verify --steps 2 \
        --timeout 60 --nvme-path /tmp/nvme$k > $L/$n.log 2>&1
      e=$?
      echo "$n exit $e match $(grep -c 'match the reference' $L/$n.log) | $(grep -o 'measured [0-9.]* MiB, planned [0-9.]* MiB ([-+0-9.]*%)' $L/$n.log | head -1)" >> $L/lane$k.txt
      [ $e = 0 ] || grep -m2 -E 'verify|error|dsrun:' $L/$n.log >> $L/lane$k.txt
    fi
    i=$((i + 1))
  done
}
for k in 0 1 2 3 4 5; do lane $k & done
(
  mkdir -p /tmp/nvmeR /tmp/nvmeC
  for v in s3-nvme s3-nvmeparam; do
    echo "== resume $v, 2 ranks" > /tmp/rc-$v.txt
    MASTER_PORT=31000 DSRUN_ARGS="--nvme-path /tmp/nvmeR" timeout 150 runtime/bench/resume_check.sh $D \
      build-gpu/train/llama-fixture-$v.bin build-gpu/train/llama-fixture-$v.json \
      build-gpu/llama-fixture/model.safetensors build-gpu/tokens.bin /tmp/rc-$v 20 10 64 2 >> /tmp/rc-$v.txt 2>&1
  done
  MASTER_PORT=31100 DSRUN_ARGS="--nvme-path /tmp/nvmeC" timeout 200 runtime/bench/train_compare.sh $D build-gpu/train build-gpu \
    build-gpu/tokens.bin /tmp/cmp 2 20 64 llama-fixture-s3 llama-fixture-s3-nvme llama-fixture-s3-nvmeparam > /tmp/cmp.txt 2>&1
) &
# Whatever has finished by then is reported.
while [ "$(jobs -rp | wc -l)" -gt 0 ] && [ $SECONDS -lt 170 ]; do sleep 2; done
echo "== verify, 2 ranks (after $SECONDS s)" >> $S
cat $L/lane*.txt | sort >> $S
echo "passed $(cat $L/lane*.txt | grep -c 'exit 0 match') of $(ls build-gpu/rp2/*.bin | wc -l)" >> $S
cat /tmp/rc-*.txt >> $S
cut -c1-220 /tmp/cmp.txt >> $S
cd /tmp && tar czf $OUT/logs.tgz v rc-* cmp cmp.txt 2>/dev/null
