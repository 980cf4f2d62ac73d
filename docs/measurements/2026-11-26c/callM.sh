# GPU call M (one GPU): the host optimizer's rate beside the host's own
# triad bandwidth, measured by dsrun before the first step on the same
# threads: the Llama 1.1 B's ZeRO 2 + CPU optimizer and ZeRO 3 + CPU
# parameters plans at world 1 (utils/training-plans.sh ... llama-1b OUT 1
# 256 200), synthetic steps (--compute synthetic: no weights needed).
S=$OUT/summary.txt
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name --format=csv,noheader > $S; nproc >> $S
B=$PWD/build-gpu/bin
for p in llama-1b-s2-cpu llama-1b-s3-cpuparam; do
  timeout 150 $B/dsrun build-gpu/t1/$p.bin --compute synthetic --steps 3 --lean-steps 3 --timeout 100 \
    --json $OUT/$p.jsonl > /tmp/$p.log 2>&1
  echo "== $p exit $? after $SECONDS s" >> $S
  grep -E "host AdamW|step time, mean|^dsrun: step 3:" /tmp/$p.log | cut -c1-300 >> $S
done
