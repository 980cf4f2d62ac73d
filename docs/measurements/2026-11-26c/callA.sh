# GPU call A (one GPU): the device changes of the seventeenth session that
# had not run (toBF16's select form, the rotary refactor), then where the
# one-GPU steps spend the time outside kernels, and what cuBLASLt's first
# algorithm costs against the fastest it offers.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S
B=$PWD/build-gpu/bin
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
(python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/w1.log 2>&1;
 python3 runtime/bench/hf_model.py gpt2-small /tmp/models/gpt2-small --no-onnx > /tmp/w2.log 2>&1) &
(timeout 400 python3 runtime/bench/hf_model.py gpt2-xl /tmp/models/gpt2-xl > /tmp/w3.log 2>&1; cp /tmp/models/gpt2-xl/model.onnx $OUT/gpt2-xl.onnx) &
timeout 120 $B/dsrun-kernel-test build-gpu/kt/*.bin > /tmp/kt.log 2>&1
echo "== kernel test exit $? after $SECONDS s" >> $S
grep -E "failed|kind" /tmp/kt.log | grep -v " 0 failed" >> $S
for p in llama-1b-speed-s1 gpt2-small-speed-s1; do
  timeout 100 $B/dsrun-gemm-bench build-gpu/sp/$p.bin --candidates 16 > $OUT/gemm-$p.txt 2>&1
  echo "== gemm bench $p exit $?: $(tail -1 $OUT/gemm-$p.txt)" >> $S
done
wait
echo "== inputs ready after $SECONDS s" >> $S
timeout 100 $B/dsrun build-gpu/llama-1b-s2.bin --data /tmp/tokens.bin --init /tmp/models/llama-1b/model.safetensors \
  --steps 30 --json /tmp/s2.json > /tmp/s2.log 2>&1
echo "== llama-1b-s2 w1 30 steps exit $?" >> $S
python3 - /tmp/s2.json docs/measurements/2026-11-26b/losses.tsv >> $S <<'PY'
import json, sys
a = [d["loss"] for d in map(json.loads, filter(str.strip, open(sys.argv[1]))) if "loss" in d]
rows = [l.split("\t") for l in open(sys.argv[2])]
c = rows[0].index("llama-1b-s2-w1")
b = [float(r[c]) for r in rows[1:len(a) + 1]]
same = sum(f"{x:.6f}" == f"{y:.6f}" for x, y in zip(a, b))
print(f"losses equal to session 17's to 6 decimals at {same} of {len(a)} steps; worst {max(abs(x-y)/y for x,y in zip(a,b)):.2e}")
PY
for p in llama-1b-speed-s1 gpt2-small-speed-s1; do
  m=llama-1b; case $p in gpt2*) m=gpt2-small;; esac
  timeout 120 $B/dsrun build-gpu/sp/$p.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors \
    --steps 12 --profile-step 10 --trace $OUT/trace-$p.json --json $OUT/$p.jsonl > $OUT/$p.log 2>&1
  echo "== $p exit $?: $(grep -E 'lean steps' $OUT/$p.log | cut -c1-160)" >> $S
  grep -E "kernel profile|idle|us after" $OUT/$p.log >> $S
done
echo "== end after $SECONDS s" >> $S
