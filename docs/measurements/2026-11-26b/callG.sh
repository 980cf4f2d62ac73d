# GPU call G (one GPU): ComputeKernels.cu split into four files with one
# set of vector loads: every kernel of the 17 kernel-test plans against
# the host reference, and GPT-2 small trained 50 steps (ZeRO 1 and 3)
# by the build before the split and after: the same losses bit for bit,
# and the step times side by side.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S
B=$PWD/build-gpu/bin
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
(python3 runtime/bench/hf_model.py gpt2-small /tmp/models/gpt2-small --no-onnx > /tmp/w-gpt2.log 2>&1) &
timeout 120 $B/dsrun-kernel-test build-gpu/kt/*.bin > /tmp/kt.log 2>&1
echo "== kernel test exit $? after $SECONDS s" >> $S
tail -25 /tmp/kt.log >> $S
wait
for p in s1 s3; do for b in dsrun-old dsrun dsrun-old dsrun; do
  timeout 90 $B/$b build-gpu/g1/gpt2-small-$p.bin --data /tmp/tokens.bin --init /tmp/models/gpt2-small/model.safetensors \
    --steps 50 --json /tmp/$b-$p.json > /tmp/$b-$p.log 2>&1
  echo "== $b $p exit $?: $(grep -E 'lean steps' /tmp/$b-$p.log | cut -c1-160)" >> $S
done; done
python3 - >> $S <<'PY'
import json
def L(p): return [(d["step"], d["loss"], d.get("grad_norm")) for d in map(json.loads, filter(str.strip, open(p))) if "loss" in d]
for p in ("s1", "s3"):
    a, b = L(f"/tmp/dsrun-old-{p}.json"), L(f"/tmp/dsrun-{p}.json")
    print(p, len(a), len(b), "identical" if a == b else "differ", a[-1], b[-1])
PY
