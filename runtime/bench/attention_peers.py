#!/usr/bin/env python3
"""PyTorch's attention kernels at the shapes dsrun trains, timed alone.

    python3 runtime/bench/attention_peers.py [--json OUT.jsonl]

For each shape (batch, query heads, key/value heads, sequence, head dim,
causal) and each of PyTorch's scaled_dot_product_attention backends that
accepts it (flash, cuDNN, memory-efficient), the forward and the backward
in bf16, each the median of 20 timed runs after 5 warm-ups, as TFLOP/s
counted the way dsrun counts them (4 B H T S D, halved when causal; the
backward 2.5 times the forward). dsrun's own kernels are timed on the same
shapes by dsrun-attention-bench; runtime/bench/attention_compare.sh puts the
two side by side.
"""
import argparse
import json

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = [
    # name, B, Hq, Hkv, T, D, causal: runtime/bench/attention_bench.cu's.
    ("llama3-8b 2x2048", 2, 32, 8, 2048, 128, True),
    ("gpt2-small 16x1024", 16, 12, 12, 1024, 64, True),
    ("gpt2-xl 4x1024", 4, 25, 25, 1024, 64, True),
    ("llama-1b 4x1024", 4, 32, 4, 1024, 64, True),
    ("hd128 full 4x1024", 4, 16, 16, 1024, 128, False),
    ("hd64 1x4096", 1, 16, 16, 4096, 64, True),
    ("hd128 1x8192", 1, 32, 8, 8192, 128, True),
    ("hd64 64x128", 64, 12, 12, 128, 64, True),
    ("hd80 4x1024", 4, 32, 32, 1024, 80, True),
    ("hd96 4x1024", 4, 32, 32, 1024, 96, True),
    ("hd256 2x2048", 2, 16, 8, 2048, 256, True),
]
BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION,
            "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION}


def flops(B, H, T, D, causal):
    f = 4.0 * B * H * T * T * D
    return f / 2 if causal else f


def timed(fn, reps=20, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    args = ap.parse_args()
    out = open(args.json, "w") if args.json else None
    dev = torch.device("cuda")
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"cuDNN {torch.backends.cudnn.version()}")
    for name, B, Hq, Hkv, T, D, causal in SHAPES:
        # [B, T, H, D] in memory, as a fused QKV projection leaves them.
        q = torch.randn(B, T, Hq, D, device=dev, dtype=torch.bfloat16).transpose(1, 2)
        k = torch.randn(B, T, Hkv, D, device=dev, dtype=torch.bfloat16).transpose(1, 2)
        v = torch.randn(B, T, Hkv, D, device=dev, dtype=torch.bfloat16).transpose(1, 2)
        for t in (q, k, v):
            t.requires_grad_(True)
        f = flops(B, Hq, T, D, causal)
        for bname, backend in BACKENDS.items():
            try:
                with sdpa_kernel(backend):
                    o = F.scaled_dot_product_attention(
                        q, k, v, is_causal=causal, enable_gqa=Hq != Hkv)
                    g = torch.randn_like(o)
                    fwd = timed(lambda: F.scaled_dot_product_attention(
                        q, k, v, is_causal=causal, enable_gqa=Hq != Hkv))
                    bwd = timed(lambda: torch.autograd.grad(
                        o, (q, k, v), g, retain_graph=True))
            except Exception as e:  # The backend refuses the shape.
                print(f"{name:22s} {bname:9s} refused: {str(e).splitlines()[0][:80]}")
                continue
            row = {"shape": name, "impl": "torch-" + bname, "fwd_ms": fwd,
                   "bwd_ms": bwd, "fwd_tflops": f / fwd / 1e9,
                   "bwd_tflops": 2.5 * f / bwd / 1e9}
            print(f"{name:22s} {bname:9s} fwd {fwd:7.3f} ms {row['fwd_tflops']:6.1f} "
                  f"TFLOP/s  bwd {bwd:7.3f} ms {row['bwd_tflops']:6.1f} TFLOP/s")
            if out:
                out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
