#!/bin/sh
# dsrun's attention kernels beside PyTorch's, in one run on one GPU: one
# table of forward and backward TFLOP/s per shape (dsrun-attention-bench,
# then runtime/bench/attention_peers.py at the same shapes).
#
#   runtime/bench/attention_compare.sh DSRUN_ATTENTION_BENCH OUTDIR
#
# DSRUN_CUDNN_LIBRARY picks the cuDNN dsrun loads (PyTorch's wheel carries
# a newer one than the system's on the project's GPU machines).
set -u
bench=$1 out=$2
here=$(dirname "$0")
mkdir -p "$out"
"$bench" --json "$out/dsrun.jsonl" > "$out/dsrun.log" 2>&1 ||
  { echo "dsrun-attention-bench failed:"; tail -3 "$out/dsrun.log"; }
python3 "$here/attention_peers.py" --json "$out/torch.jsonl" \
  > "$out/torch.log" 2> /dev/null ||
  { echo "attention_peers.py failed:"; tail -3 "$out/torch.log"; }
head -1 "$out/dsrun.log"
head -1 "$out/torch.log"
python3 - "$out/dsrun.jsonl" "$out/torch.jsonl" <<'PY'
import json, sys
rows = {}
for path in sys.argv[1:]:
    try:
        for line in open(path):
            if line.strip():
                r = json.loads(line)
                rows.setdefault(r["shape"], {})[r["impl"]] = r
    except OSError:
        pass
impls = ["dsrun-flash", "dsrun-cudnn", "torch-flash", "torch-cudnn"]
print(f"{'shape':22}" + "".join(f"{i:>16}" for i in impls) + "   (TFLOP/s forward/backward)")
for shape, by in rows.items():
    cells = []
    for i in impls:
        r = by.get(i)
        cells.append(f"{r['fwd_tflops']:7.1f}/{r['bwd_tflops']:<7.1f}" if r else f"{'-':>15}")
    print(f"{shape:22}" + "".join(f"{c:>16}" for c in cells))
PY
