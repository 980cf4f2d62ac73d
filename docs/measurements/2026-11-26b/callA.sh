# GPU call A (one GPU): the HF exports the 200-step runs plan from, the
# host-offload loops before and after vectorizing (synthetic steps of a
# 1.2 B Llama-shaped plan, ZeRO 2 + CPU optimizer and ZeRO 3 + CPU
# parameters, world 1), and --verify of the 48 runtime plans at world 1
# with the new host loops (bit for bit against the host reference).
# Inputs made here:
#   dsc-modelgen (Llama shape, 16 layers, hidden 2048, vocab 128256) -> l1b.onnx
#   utils/training-plans.sh build/bin/dsc l1b.onnx l1b p 1 256 200 -> build-gpu/p1
#   utils/runtime-plans.sh build/bin/dsc build-gpu/rp.onnx 1 16 build-gpu/rp1
#   build-gpu/bin/dsrun-old: the build before this change; dsrun: after
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S; nproc >> $S
B=$PWD/build-gpu/bin
for m in gpt2-small llama-1b; do
  (timeout 400 python3 runtime/bench/hf_model.py $m /tmp/models/$m > /tmp/exp-$m.log 2>&1
   cp /tmp/models/$m/model.onnx $OUT/$m.onnx; echo "export $m exit $? after $SECONDS s" >> /tmp/exp.txt) &
done
L=/tmp/v; mkdir -p $L
lane() {
  k=$1 i=0; mkdir -p /tmp/nvme$k
  for p in build-gpu/rp1/*.bin; do
    if [ $((i % 3)) = $k ]; then
      n=$(basename $p .bin)
      timeout 60 $B/dsrun $p --verify --steps 2 --timeout 50 --nvme-path /tmp/nvme$k > $L/$n.log 2>&1
      echo "$n exit $? match $(grep -c 'match the reference' $L/$n.log)" >> $L/lane$k.txt
    fi
    i=$((i + 1))
  done
}
for k in 0 1 2; do lane $k & done
wait
echo "== verify, world 1 (after $SECONDS s): passed $(cat $L/lane*.txt | grep -c 'exit 0 match [1-9]') of 48" >> $S
grep -v "exit 0 match [1-9]" $L/lane*.txt >> $S
cat /tmp/exp.txt >> $S; tail -2 /tmp/exp-*.log >> $S
# Host offload, old loops and new, one at a time.
ab() {
  name=$1 bin=$2 plan=$3; shift 3
  timeout 150 $B/$bin build-gpu/p1/$plan.bin --compute synthetic --steps 3 --lean-steps 4 --timeout 100 --json /tmp/ab-$name.json "$@" > /tmp/ab-$name.log 2>&1
  echo "== $name: exit $? after $SECONDS s" >> $S
  grep -E "^dsrun: step|lean" /tmp/ab-$name.log | cut -c1-330 >> $S
}
ab s2cpu-old dsrun-old l1b-s2-cpu
ab s2cpu-new8 dsrun l1b-s2-cpu --host-threads 8
ab s2cpu-new dsrun l1b-s2-cpu
ab s3cpuparam-old dsrun-old l1b-s3-cpuparam
ab s3cpuparam-new dsrun l1b-s3-cpuparam
cd /tmp && tar czf $OUT/logs.tgz v ab-* exp-* 2>/dev/null
