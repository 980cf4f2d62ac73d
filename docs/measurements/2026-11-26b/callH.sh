# GPU call H (one GPU): rotary embeddings eight pairs a thread. Every
# kernel of the 17 kernel-test plans against the host reference, then the
# Llama 1.1 B at 4 x 1024 tokens, ZeRO 1 (utils/speed-plans.sh ... H200 1
# 4 "1"), 12 steps with the kernel profile of step 10, by the build before
# (dsrun) and after (dsrun-rot), twice each, alternating.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S
B=$PWD/build-gpu/bin
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
(python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/w.log 2>&1) &
timeout 120 $B/dsrun-kernel-test build-gpu/kt/*.bin > /tmp/kt.log 2>&1
echo "== kernel test exit $? after $SECONDS s" >> $S
grep -E "failed|rotary|kind" /tmp/kt.log | grep -v " 0 failed" >> $S
wait
for k in 1 2; do for b in dsrun dsrun-rot; do
  timeout 100 $B/$b build-gpu/sp/llama-1b-speed-s1.bin --data /tmp/tokens.bin --init /tmp/models/llama-1b/model.safetensors \
    --steps 12 --profile-step 10 --json /tmp/$b-$k.json > /tmp/$b-$k.log 2>&1
  echo "== $b run $k exit $?: $(grep -E 'lean steps' /tmp/$b-$k.log | cut -c1-150)" >> $S
  grep -E "^ *rotary" /tmp/$b-$k.log | head -2 >> $S
done; done
grep -A14 "kernel profile" /tmp/dsrun-rot-2.log | cut -c1-130 >> $S
python3 - >> $S <<'PY'
import json
def L(p): return [(d["step"], d["loss"]) for d in map(json.loads, filter(str.strip, open(p))) if "loss" in d]
a, b = L("/tmp/dsrun-1.json"), L("/tmp/dsrun-rot-1.json")
print("losses", "identical" if a == b else "differ", max(abs(x[1] - y[1]) / y[1] for x, y in zip(a, b)))
PY
