# GPU call J (one GPU, call I's machine if warm): each one-GPU speed plan
# as dsc planned it and planned again with call I's gemm_algorithms alone
# (NAME-speed-s1-algo.bin: dsc plan ... --calibration with only that
# section, so nothing else of the plan moves), alternating, twice; the
# products' time in the profiled step, and whether the losses move.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S
B=$PWD/build-gpu/bin
[ -f /tmp/tokens.bin ] || python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
for m in llama-1b gpt2-xl gpt2-small; do
  [ -f /tmp/models/$m/model.safetensors ] || python3 runtime/bench/hf_model.py $m /tmp/models/$m --no-onnx > /tmp/w-$m.log 2>&1
done
echo "inputs after $SECONDS s" >> $S
for k in 1 2; do for m in llama-1b gpt2-xl gpt2-small; do for v in "" -algo; do
  p=$m-speed-s1$v
  timeout 100 $B/dsrun build-gpu/sp/$p.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors \
    --steps 12 --profile-step 10 --json /tmp/$p-$k.jsonl > /tmp/$p-$k.log 2>&1
  echo "== $p run $k exit $?: $(grep -E 'lean steps' /tmp/$p-$k.log | cut -c60-160)" >> $S
  grep -E "^  gemm" /tmp/$p-$k.log >> $S
  grep -E "note:" /tmp/$p-$k.log | head -2 >> $S
done; done; done
python3 - >> $S <<'PY'
import json
def L(p): return [d["loss"] for d in map(json.loads, filter(str.strip, open(p))) if "loss" in d]
for m in ["llama-1b", "gpt2-xl", "gpt2-small"]:
    a, b = L(f"/tmp/{m}-speed-s1-1.jsonl"), L(f"/tmp/{m}-speed-s1-algo-1.jsonl")
    print(m, "losses", "equal" if a == b else "differ", "worst %.2e" % max(abs(x - y) / y for x, y in zip(a, b)))
PY
echo "== end after $SECONDS s" >> $S
