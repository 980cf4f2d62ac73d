# GPU call B (one GPU): AdamW in one pass (gradient read as stored, 16-bit
# weights written as it goes). --verify of the 96 runtime plans at world 1
# (bf16 and fp32) bit for bit against the host reference; the Llama's
# 30-step losses against session 17's; the Llama and GPT-2 XL (1 GPU, ZeRO
# 1) step with the kernel profile and the trace; cuBLASLt's first
# algorithm against the fastest for the Llama and the XL.
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S
B=$PWD/build-gpu/bin
python3 runtime/bench/make_text_tokens.py /tmp/tokens.bin --mb 8 > /tmp/data.log 2>&1
(python3 runtime/bench/hf_model.py llama-1b /tmp/models/llama-1b --no-onnx > /tmp/w1.log 2>&1) &
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
for p in llama-1b-speed-s1 gpt2-xl-speed-s1; do
  timeout 100 $B/dsrun-gemm-bench build-gpu/sp/$p.bin --candidates 16 > $OUT/gemm-$p.txt 2>&1
  echo "== gemm bench $p exit $?: $(tail -1 $OUT/gemm-$p.txt)" >> $S
done
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
mkdir -p /tmp/o
for k in 1 2; do for p in llama-1b-speed-s1 gpt2-xl-speed-s1; do
  m=llama-1b; case $p in gpt2*) m=gpt2-xl;; esac
  timeout 150 $B/dsrun build-gpu/sp/$p.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors \
    --steps 12 --profile-step 10 --trace /tmp/o/trace-$p-$k.json --json /tmp/o/$p-$k.jsonl > /tmp/o/$p-$k.log 2>&1
  echo "== $p run $k exit $?: $(grep -E 'lean steps' /tmp/o/$p-$k.log | cut -c1-160)" >> $S
  [ $k = 1 ] && grep -E "kernel profile|idle|us after|^  [a-z]" /tmp/o/$p-$k.log | head -40 >> $S
done; done
tar czf $OUT/logs.tgz -C /tmp/o .
echo "== end after $SECONDS s" >> $S
