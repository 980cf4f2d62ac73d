# GPU call X: --val-data / --eval-every against the PyTorch reference's
# validation loss (model.eval(), no_grad, the same windows), at ZeRO 1 and
# 3 (gathers in the evaluation) for Llama tiny and GPT-2 small.
cd $1
R=$OUT/r; mkdir -p $R
(cmake -S runtime -B build-rt -DCMAKE_BUILD_TYPE=Release > $R/cmake.log 2>&1 && cmake --build build-rt -j16 > $R/build.log 2>&1) || { tail -30 $R/build.log; cd $OUT && tar czf results.tgz r; exit 1; }
python3 runtime/bench/make_text_tokens.py /tmp/all.bin --mb 9 > $R/data.log 2>&1
python3 -c "import numpy as np; a = np.fromfile('/tmp/all.bin', np.uint16); a[:8 << 20].tofile('/tmp/tokens.bin'); a[8 << 20:].tofile('/tmp/val.bin'); print(len(a) - (8 << 20), 'validation tokens')"
for m in gpt2-small llama-tiny; do python3 runtime/bench/hf_model.py $m /tmp/models/$m --no-onnx > $R/weights-$m.log 2>&1; done
T=build-gpu/train
EV="--val-data /tmp/val.bin --eval-every 10 --eval-batches 16"
for m in llama-tiny gpt2-small; do
  timeout 120 python3 runtime/bench/torch_reference.py --model /tmp/models/$m --data /tmp/tokens.bin --ds-config $T/$m-s1.json --seq 256 --steps 30 $EV --json $R/$m-ref.jsonl > $R/$m-ref.log 2>&1 || tail -3 $R/$m-ref.log
  for v in s1 s3; do
    NCCL_NVLS_ENABLE=0 timeout 100 ./build-rt/bin/dsrun $T/$m-$v.bin --data /tmp/tokens.bin --init /tmp/models/$m/model.safetensors --steps 30 $EV --json $R/$m-$v.json > $R/$m-$v.log 2>&1
    echo "== $m-$v exit $?"; grep -m3 -E "error|validation loss" $R/$m-$v.log | cut -c1-160
    python3 - $R/$m-$v.json $R/$m-ref.jsonl <<'PY'
import json, sys
def val(p): return {d["step"]: d["val_loss"] for d in map(json.loads, filter(str.strip, open(p))) if "val_loss" in d}
a, b = val(sys.argv[1]), val(sys.argv[2])
for s in sorted(b):
    print("  step %3d  validation dsrun %.5f  pytorch %.5f  diff %.3f%%" % (s, a.get(s, float("nan")), b[s], 100 * abs(a.get(s, float("nan")) - b[s]) / b[s]))
PY
    python3 runtime/bench/compare_losses.py $R/$m-$v.json $R/$m-ref.jsonl | tail -1
  done
done
cd $OUT && tar czf results.tgz r && rm -rf r
