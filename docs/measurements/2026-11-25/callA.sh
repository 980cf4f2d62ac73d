# GPU call A (one H100): dsrun as an interpreter of plan format 9 (views),
# against the build before it (plan format 8), same inputs:
#  1. --verify on the 48 runtime plans (1 GPU), the new build;
#  2. lean step times of those plans, old and new;
#  3. training from the same random weights and tokens, old and new:
#     losses and saved weights compared (llama-small and gpt-small at
#     4 x 256, every variant of utils/training-plans.sh);
#  4. speed plans of a GPT-2-small-shaped model (16 x 1024, ZeRO 1-3 and
#     checkpointed), old and new.
# Inputs made here: build-gpu/{new,old}/{rp,train,speed} by
#   utils/runtime-plans.sh, utils/training-plans.sh, utils/speed-plans.sh
# with this dsc and with the one of commit 276acee.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $S
(cmake -S runtime -B /tmp/rt -DCMAKE_BUILD_TYPE=Release > /tmp/rt.log 2>&1 && cmake --build /tmp/rt -j8 --target dsrun >> /tmp/rt.log 2>&1; echo "new build $?" >> $S) &
(cmake -S build-gpu/old/runtime -B /tmp/rt-old -DCMAKE_BUILD_TYPE=Release > /tmp/rt-old.log 2>&1 && cmake --build /tmp/rt-old -j8 --target dsrun >> /tmp/rt-old.log 2>&1; echo "old build $?" >> $S) &
python3 utils/random-weights.py build-gpu/gpt-small.json /tmp/gpt-small.safetensors >> $S
python3 utils/random-weights.py build-gpu/llama-small.json /tmp/llama-small.safetensors >> $S
python3 -c "import numpy as np; np.random.default_rng(1).integers(0, 32000, 4000000, dtype=np.uint16).tofile('/tmp/tokens.bin')"
wait
grep -E "error|Error" /tmp/rt.log | head -5 >> $S
NEW=/tmp/rt/bin/dsrun OLD=/tmp/rt-old/bin/dsrun L=/tmp/logs
mkdir -p $L /tmp/nvme
echo "== verify (new) and lean ms old/new" >> $S
for p in build-gpu/new/rp/*.bin; do
  n=$(basename $p .bin)
  timeout 60 $NEW $p --verify --steps 2 --lean-steps 4 --nvme-path /tmp/nvme > $L/v-$n.log 2>&1; e=$?
  timeout 60 $OLD build-gpu/old/rp/$n.bin --steps 2 --lean-steps 4 --nvme-path /tmp/nvme > $L/o-$n.log 2>&1
  echo "$n exit $e $(grep -c 'match the reference' $L/v-$n.log) new $(grep -o 'mean [0-9.]* ms' $L/v-$n.log) old $(grep -o 'mean [0-9.]* ms' $L/o-$n.log) | $(grep -o 'measured [0-9.]* MiB, planned [0-9.]* MiB ([-+0-9.]*%)' $L/v-$n.log)" >> $S
done
echo "== training old vs new" >> $S
for p in build-gpu/new/train/*.bin; do
  n=$(basename $p .bin); m=${n%-s[0-9]*}
  for T in new old; do
    B=$NEW; [ $T = old ] && B=$OLD
    timeout 120 $B build-gpu/$T/train/$n.bin --data /tmp/tokens.bin --init /tmp/$m.safetensors --steps 20 --json $L/$T-$n.json --save-weights /tmp/$T-$n.safetensors > $L/$T-$n.log 2>&1
    echo "$T $n exit $?" >> $S
  done
  python3 - $L/new-$n.json $L/old-$n.json /tmp/new-$n.safetensors /tmp/old-$n.safetensors >> $S <<'PY'
import json, sys, hashlib
def losses(p):
    return [d["loss"] for d in map(json.loads, open(p)) if "loss" in d]
a, b = losses(sys.argv[1]), losses(sys.argv[2])
same = sum(x == y for x, y in zip(a, b))
worst = max((abs(x - y) / abs(y) for x, y in zip(a, b)), default=0)
h = [hashlib.sha256(open(f, "rb").read()).hexdigest()[:12] for f in sys.argv[3:5]]
print(f"  {len(a)}/{len(b)} steps, {same} losses equal, worst {worst:.2e}, weights {'equal' if h[0] == h[1] else 'differ ' + ' '.join(h)}")
PY
  grep -h -o 'measured [0-9.]* MiB, planned [0-9.]* MiB ([-+0-9.]*%)' $L/new-$n.log >> $S
done
echo "== speed old vs new" >> $S
for p in build-gpu/new/speed/*.bin; do
  n=$(basename $p .bin)
  for T in new old; do
    B=$NEW; [ $T = old ] && B=$OLD
    timeout 120 $B build-gpu/$T/speed/$n.bin --data /tmp/tokens.bin --init /tmp/gpt-small.safetensors --steps 6 --lean-steps 6 --json $L/$T-$n.json > $L/$T-$n.log 2>&1
    echo "$T $n exit $? $(grep -o 'lean steps.*mean [0-9.]* ms' $L/$T-$n.log | grep -o 'mean [0-9.]* ms') $(grep -o 'measured [0-9.]* MiB, planned [0-9.]* MiB ([-+0-9.]*%)' $L/$T-$n.log)" >> $S
  done
  python3 -c "
import json,sys
l=lambda p:[d['loss'] for d in map(json.loads,open(p)) if 'loss' in d]
a,b=l('$L/new-$n.json'),l('$L/old-$n.json'); print('  losses equal', sum(x==y for x,y in zip(a,b)), 'of', len(a))" >> $S
done
cd /tmp && tar czf $OUT/logs.tgz logs
