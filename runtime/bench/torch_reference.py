#!/usr/bin/env python3
"""The PyTorch run dsrun's training is checked against.

    python3 runtime/bench/torch_reference.py --model DIR --data TOKENS.bin \
        --seq 1024 --micro-batch 4 --grad-accum 2 --world 2 --steps 200 \
        [--lr 3e-4 --betas 0.9 0.95 --eps 1e-8 --weight-decay 0.1] \
        [--precision bf16|fp32] [--seed 1234] [--json OUT.jsonl]

The same training DeepSpeed (and dsrun) does, in one process:
  - the HF model of DIR (hf_model.py), weights from its model.safetensors;
  - bf16: the model cast to bf16 and fp32 master weights made from those
    bf16 values, as DeepSpeed's bf16 optimizer does; the optimizer steps
    the masters and the model gets them back rounded to bf16;
  - the same samples in the same order as dsrun's ranks read them
    (dsrun_data.py): every (micro step, rank) of a step is one forward of
    micro-batch rows, its loss divided by grad_accum x world before
    backward, so the gradient is the mean that ZeRO's reduction gives;
  - torch.optim.AdamW (decoupled weight decay, bias correction), which
    updates as DeepSpeed's FusedAdam in adam_w_mode does.
Prints one JSON line per step: step, loss (the mean of the micro losses),
ms, tokens/s.
"""
import argparse
import json
import os
import sys
import time

import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dsrun_data  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--micro-batch", type=int, required=True)
    ap.add_argument("--grad-accum", type=int, default=1)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--betas", type=float, nargs=2, default=[0.9, 0.999])
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--precision", choices=["bf16", "fp32"], default="bf16")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--json")
    a = ap.parse_args()

    dev = torch.device("cuda")
    dtype = torch.bfloat16 if a.precision == "bf16" else torch.float32
    model = transformers.AutoModelForCausalLM.from_pretrained(
        a.model, torch_dtype=torch.float32, attn_implementation="sdpa")
    model.config.use_cache = False
    model.to(dev, dtype).train()
    params = [p for p in model.parameters() if p.requires_grad]
    master = [p.detach().float().clone().requires_grad_(True) for p in params]
    opt = torch.optim.AdamW(master, lr=a.lr, betas=tuple(a.betas), eps=a.eps,
                            weight_decay=a.weight_decay, foreach=False)

    tokens = dsrun_data.read_tokens(a.data)
    sampler = dsrun_data.Sampler(len(tokens), a.seq, a.seed)
    vocab = model.get_output_embeddings().weight.shape[0]
    scale = 1.0 / (a.grad_accum * a.world)
    out = open(a.json, "w") if a.json else None
    for step in range(1, a.steps + 1):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for p in params:
            p.grad = None
        losses = []
        for m in range(a.grad_accum):
            for r in range(a.world):
                first = dsrun_data.sample_index(step, m, r, 0, a.grad_accum,
                                                a.world, a.micro_batch)
                x, y = dsrun_data.batch(tokens, sampler, first, a.micro_batch,
                                        a.seq)
                x = torch.from_numpy(x).to(dev)
                y = torch.from_numpy(y).to(dev)
                logits = model(input_ids=x).logits.float()
                loss = torch.nn.functional.cross_entropy(
                    logits.reshape(-1, vocab), y.reshape(-1))
                (loss * scale).backward()
                losses.append(loss.detach())
        for p, q in zip(params, master):
            q.grad = p.grad.float() if p.grad is not None else None
        opt.step()
        with torch.no_grad():
            for p, q in zip(params, master):
                p.copy_(q)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        loss = float(torch.stack(losses).mean())
        n = a.grad_accum * a.world * a.micro_batch * a.seq
        line = {"step": step, "loss": loss, "ms": round(ms, 3),
                "tokens_per_s": round(n / (ms / 1e3))}
        print(json.dumps(line), flush=True)
        if out:
            out.write(json.dumps(line) + "\n")
    if out:
        out.close()


if __name__ == "__main__":
    main()
