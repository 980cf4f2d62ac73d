# GPU call C (one GPU): the clipping norm's sum of squares read 16 bytes a
# load, and the fused AdamW's fp32-weights fix. --verify of the 96 runtime
# plans at world 1 (bf16 and fp32); the Llama's 30 losses beside session
# 17's (the norm sums in another order now: close, not equal); the three
# models' one-GPU steps (ZeRO 1) with the kernel profile and trace.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S
B=$PWD/build-gpu/bin
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
(python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/w1.log 2>&1;
 python3 runtime/bench/hf_model.py gpt2-small /tmp/models/gpt2-small --no-onnx > /tmp/w2.log 2>&1) &
(python3 runtime/bench/hf_model.py gpt2-xl /tmp/models/gpt2-xl --no-onnx > /tmp/w3.log 2>&1) &
L=/tmp/v; mkdir -p $L
lane() {
  k=$1 i=0; mkdir -p /tmp/nvme$k
  for p in build-gpu/rp1/*.bin build-gpu/rp1f/*.bin; do
    if [ $((i % 3)) = $k ]; then
      n=$(basename $(dirname $p))-$(basename $p .bin)
      timeout 60 $B/dsrun $p --verify --steps 2 --timeout 50 --nvme-path /tmp/nvme$k > $L/$n.log 2>&1
      echo "$n exit $? match $(grep -c 'match the reference' $L/$n.log)" >> $L/lane$k.txt
    fi
    i=$((i + 1))
  done
}
for k in 0 1 2; do lane $k & done
wait
echo "== verify, world 1 (after $SECONDS s): passed $(cat $L/lane*.txt | grep -c 'exit 0 match [1-9]') of 96" >> $S
grep -v "exit 0 match [1-9]" $L/lane*.txt >> $S
for f in $(grep -v "exit 0 match [1-9]" $L/lane*.txt | head -2 | sed 's/.*txt://; s/ .*//'); do tail -5 $L/$f.log >> $S; done
timeout 100 $B/dsrun build-gpu/llama-1b-s2.bin --data /tmp/tokens.bin --init /tmp/models/llama-1b/model.safetensors \
  --steps 30 --json /tmp/s2.json > /tmp/s2.log 2>&1
echo "== llama-1b-s2 w1 30 steps exit $?" >> $S
python3 - /tmp/s2.json docs/measurements/2026-11-26b/losses.tsv >> $S <<'PY'
import json, sys
a = [d["loss"] for d in map(json.loads, filter(str.strip, open(sys.argv[1]))) if "loss" in d]
rows = [l.split("\t") for l in open(sys.argv[2])]
c = rows[0].index("llama-1b-s2-w1")
b = [float(r[c]) for r in rows[1:len(a) + 1]]
d = sorted(abs(x - y) / y for x, y in zip(a, b))
print(f"against session 17: equal to 6 decimals at {sum(f'{x:.6f}' == f'{y:.6f}' for x, y in zip(a, b))} of {len(a)} steps; median {d[len(d)//2]:.2e}, worst {d[-1]:.2e}")
PY
mkdir -p /tmp/o
for p in llama-1b-speed-s1 gpt2-xl-speed-s1 gpt2-small-speed-s1; do
  m=${p%-speed-s1}
  timeout 150 $B/dsrun build-gpu/sp/$p.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors \
    --steps 12 --profile-step 10 --trace /tmp/o/trace-$p.json --json /tmp/o/$p.jsonl > /tmp/o/$p.log 2>&1
  echo "== $p exit $?: $(grep -E 'lean steps' /tmp/o/$p.log | cut -c1-160)" >> $S
  grep -E "kernel profile|idle" /tmp/o/$p.log >> $S
done
tar czf $OUT/logs.tgz -C /tmp/o .
echo "== end after $SECONDS s" >> $S
