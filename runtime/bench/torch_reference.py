#!/usr/bin/env python3
"""The PyTorch run dsrun's training is checked against.

    python3 runtime/bench/torch_reference.py --model DIR --data TOKENS.bin \
        --ds-config ds_config.json --seq 1024 --world 2 --steps 200 \
        [--seed 1234] [--json OUT.jsonl]

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
    updates as DeepSpeed's FusedAdam in adam_w_mode does, with the config's
    lr, betas, eps and weight decay;
  - the config's scheduler (ds_schedules.py) and gradient_clipping
    (DeepSpeed's default 1.0 when absent; 0 turns it off), clipping the
    global norm of the averaged fp32 gradients as DeepSpeed does;
  - bf16 when the config enables it, else fp32; micro batch and
    accumulation from the config.
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
import ds_schedules  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--ds-config", required=True)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--json")
    a = ap.parse_args()
    cfg = json.load(open(a.ds_config))
    opt_params = cfg.get("optimizer", {}).get("params", {})
    lr0 = opt_params.get("lr", 1e-3)
    betas0 = opt_params.get("betas", [0.9, 0.999])
    sched = cfg.get("scheduler", {})
    clip = cfg.get("gradient_clipping", 1.0)
    micro = cfg["train_micro_batch_size_per_gpu"]
    accum = cfg.get("gradient_accumulation_steps", 1)
    bf16 = cfg.get("bf16", {}).get("enabled", False)

    dev = torch.device("cuda")
    dtype = torch.bfloat16 if bf16 else torch.float32
    model = transformers.AutoModelForCausalLM.from_pretrained(
        a.model, torch_dtype=torch.float32, attn_implementation="sdpa")
    model.config.use_cache = False
    model.to(dev, dtype).train()
    params = [p for p in model.parameters() if p.requires_grad]
    master = [p.detach().float().clone().requires_grad_(True) for p in params]
    opt = torch.optim.AdamW(master, lr=lr0, betas=tuple(betas0),
                            eps=opt_params.get("eps", 1e-8),
                            weight_decay=opt_params.get("weight_decay", 0.0),
                            foreach=False)

    tokens = dsrun_data.read_tokens(a.data)
    sampler = dsrun_data.Sampler(len(tokens), a.seq, a.seed)
    vocab = model.get_output_embeddings().weight.shape[0]
    scale = 1.0 / (accum * a.world)
    out = open(a.json, "w") if a.json else None
    for step in range(1, a.steps + 1):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for p in params:
            p.grad = None
        losses = []
        for m in range(accum):
            for r in range(a.world):
                first = dsrun_data.sample_index(step, m, r, 0, accum,
                                                a.world, micro)
                x, y = dsrun_data.batch(tokens, sampler, first, micro,
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
        lr, b1, b2 = ds_schedules.hyper(sched.get("type"), sched.get("params"),
                                        step, lr0, betas0[0], betas0[1])
        for g in opt.param_groups:
            g["lr"], g["betas"] = lr, (b1, b2)
        norm = None
        if clip > 0:
            norm = float(torch.nn.utils.clip_grad_norm_(master, clip))
        opt.step()
        with torch.no_grad():
            for p, q in zip(params, master):
                p.copy_(q)
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        loss = float(torch.stack(losses).mean())
        n = accum * a.world * micro * a.seq
        line = {"step": step, "loss": loss, "lr": lr, "grad_norm": norm,
                "ms": round(ms, 3),
                "tokens_per_s": round(n / (ms / 1e3))}
        print(json.dumps(line), flush=True)
        if out:
            out.write(json.dumps(line) + "\n")
    if out:
        out.close()


if __name__ == "__main__":
    main()
