# GPU call B (one H100), after call A found stage 3 with CPU parameters
# failing --verify (a host callback read its sub-group's range through
# references to locals gone by then) and fixed it; kernel launches now
# checked one by one.
#  1. --verify on the 48 runtime plans (1 GPU);
#  2. training old vs new from the same weights and tokens: stage 3 with
#     CPU parameters, and stage 2 without gradient clipping (call A's
#     stage-2 runs parted from the old build only where the clip factor
#     came into play: the norm is now summed in one pass over the
#     partition rather than one per tensor piece);
#  3. the speed plans of the GPT-2-small-shaped model, old and new.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $S
(cmake -S runtime -B /tmp/rt -DCMAKE_BUILD_TYPE=Release > /tmp/rt.log 2>&1 && cmake --build /tmp/rt -j8 --target dsrun >> /tmp/rt.log 2>&1; echo "new build $?" >> $S) &
(cmake -S build-gpu/old/runtime -B /tmp/rt-old -DCMAKE_BUILD_TYPE=Release > /tmp/rt-old.log 2>&1 && cmake --build /tmp/rt-old -j8 --target dsrun >> /tmp/rt-old.log 2>&1; echo "old build $?" >> $S) &
python3 utils/random-weights.py build-gpu/gpt-small.json /tmp/gpt-small.safetensors >> $S
python3 utils/random-weights.py build-gpu/llama-small.json /tmp/llama-small.safetensors >> $S
python3 -c "import numpy as np; np.random.default_rng(1).integers(0, 32000, 4000000, dtype=np.uint16).tofile('/tmp/tokens.bin')"
wait
grep -E " error|Error " /tmp/rt.log | head -5 >> $S
NEW=/tmp/rt/bin/dsrun OLD=/tmp/rt-old/bin/dsrun L=/tmp/logs
mkdir -p $L /tmp/nvme
echo "== verify (new)" >> $S
for p in build-gpu/new/rp/*.bin; do
  n=$(basename $p .bin)
  timeout 60 $NEW $p --verify --steps 2 --lean-steps 4 --nvme-path /tmp/nvme > $L/v-$n.log 2>&1; e=$?
  echo "$n exit $e $(grep -c 'match the reference' $L/v-$n.log) $(grep -o 'mean [0-9.]* ms' $L/v-$n.log) | $(grep -o 'measured [0-9.]* MiB, planned [0-9.]* MiB ([-+0-9.]*%)' $L/v-$n.log)" >> $S
  grep -m1 'dsrun --verify: rank 0: [a-z]' $L/v-$n.log | grep -v match >> $S
done
echo "== training old vs new" >> $S
for n in gpt-small-s3-cpuparam llama-small-s3-cpuparam gpt-small-s2-noclip llama-small-s2-noclip; do
  m=${n%-s[0-9]*}
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
done
echo "== speed old vs new (10 steps, 3 timed)" >> $S
for p in build-gpu/new/speed/*.bin; do
  n=$(basename $p .bin)
  for T in new old; do
    B=$NEW; [ $T = old ] && B=$OLD
    timeout 120 $B build-gpu/$T/speed/$n.bin --data /tmp/tokens.bin --init /tmp/gpt-small.safetensors --steps 10 --timed-steps 3 --json $L/$T-$n.json > $L/$T-$n.log 2>&1
    echo "$T $n exit $? $(grep -o 'lean steps.*mean [0-9.]* ms' $L/$T-$n.log | grep -o 'mean [0-9.]* ms') $(grep -o 'measured [0-9.]* MiB, planned [0-9.]* MiB ([-+0-9.]*%)' $L/$T-$n.log)" >> $S
  done
  python3 -c "
import json
l=lambda p:[d['loss'] for d in map(json.loads,open(p)) if 'loss' in d]
a,b=l('$L/new-$n.json'),l('$L/old-$n.json'); print('  losses equal', sum(x==y for x,y in zip(a,b)), 'of', len(a))" >> $S 2>&1
done
cd /tmp && tar czf $OUT/logs.tgz logs
