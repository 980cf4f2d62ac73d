#!/usr/bin/env python3
"""What PyTorch holds for GPT-2 small's activations: the figures dsc's plan
of the same model is set beside (docs/compute.md).

    python3 runtime/bench/torch_activation_memory.py [MICRO_BATCH SEQ]

HF GPT2LMHeadModel, 124M parameters, bf16 weights (DeepSpeed's bf16 mode),
dropout 0, one micro batch of random tokens; the loss as HF computes it
(logits upcast to fp32, cross entropy). For each attention implementation,
with and without gradient checkpointing, it prints, in MiB:
  weights    what is allocated before the forward
  forward    allocated after the forward and the loss, minus weights: what
             autograd saved for backward, the logits and the loss
  peak       the peak of the whole step, minus weights
  grads      the gradients left after backward
"""
import json
import sys

import torch
import transformers

MiB = 1 << 20


def measure(attn, checkpointing, micro, seq):
    cfg = transformers.GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0,
                                  attn_pdrop=0.0, use_cache=False,
                                  n_positions=max(1024, seq))
    model = transformers.GPT2LMHeadModel._from_config(cfg, attn_implementation=attn)
    model = model.to("cuda", torch.bfloat16).train()
    if checkpointing:
        model.gradient_checkpointing_enable()
    x = torch.randint(0, cfg.vocab_size, (micro, seq), device="cuda")
    y = torch.randint(0, cfg.vocab_size, (micro, seq), device="cuda")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    logits = model(x).logits
    loss = torch.nn.functional.cross_entropy(
        logits.float().view(-1, cfg.vocab_size), y.view(-1))
    forward = torch.cuda.memory_allocated() - base
    del logits
    loss.backward()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    grads = sum(p.grad.numel() * p.grad.element_size()
                for p in model.parameters() if p.grad is not None)
    result = {"attention": attn, "checkpointing": checkpointing,
              "micro_batch": micro, "seq": seq,
              "weights_mib": base / MiB, "forward_mib": forward / MiB,
              "peak_mib": peak / MiB, "grads_mib": grads / MiB}
    del model, loss, x, y
    torch.cuda.empty_cache()
    return result


def main():
    micro = int(sys.argv[1]) if len(sys.argv) > 1 else 16
    seq = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    print(f"torch {torch.__version__}, transformers {transformers.__version__}, "
          f"{torch.cuda.get_device_name()}")
    rows = []
    for attn in ("sdpa", "eager"):
        for ckpt in (False, True):
            r = measure(attn, ckpt, micro, seq)
            rows.append(r)
            print(f"{attn:5} checkpointing={str(ckpt):5}  weights "
                  f"{r['weights_mib']:8.1f}  forward {r['forward_mib']:9.1f}  "
                  f"peak {r['peak_mib']:9.1f}  grads {r['grads_mib']:7.1f} MiB",
                  flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
