#!/usr/bin/env python3
"""PyTorch's training speed on one GPU: the peer dsrun's tokens/s is set
beside.

    python3 runtime/bench/torch_train_speed.py --model DIR --micro 16 \
        --seq 1024 [--steps 20] [--compile] [--gradient-checkpointing]
        [--json OUT.jsonl]

How people train an HF causal LM in PyTorch today: the model of DIR
(hf_model.py) in fp32 under bf16 autocast, attention through SDPA
(flash), fused AdamW (lr 3e-4, betas 0.9/0.95, weight decay 0.1),
gradient clipping at 1.0, random tokens (speed does not depend on them).
With --compile the model goes through torch.compile first; with
--gradient-checkpointing every layer is recomputed in backward
(transformers' gradient_checkpointing_enable, non-reentrant), the peer of
dsc plan --checkpoint-layers. The first
three steps warm up and are not counted.

Prints one JSON line: tokens/s, ms per step, peak device memory, and
model FLOP utilisation counted as 6 x parameters x tokens plus attention
(6 x layers x seq x hidden per token: QK^T and PV, forward and backward,
causal masking not subtracted), against the dense bf16 peak given by
--peak-tflops (989, H100/H200 SXM).
"""
import argparse
import json
import time

import torch
import transformers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--micro", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--gradient-checkpointing", action="store_true")
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    ap.add_argument("--json")
    a = ap.parse_args()

    torch.manual_seed(0)
    config = transformers.AutoConfig.from_pretrained(a.model)
    model = transformers.AutoModelForCausalLM.from_config(
        config, attn_implementation="sdpa").cuda()
    if a.gradient_checkpointing:
        model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95),
                            weight_decay=0.1, fused=True)
    step_fn = model
    if a.compile:
        step_fn = torch.compile(model)
    vocab = config.vocab_size
    layers = config.num_hidden_layers
    hidden = config.hidden_size
    tokens = a.micro * a.seq

    def one_step():
        ids = torch.randint(0, vocab, (a.micro, a.seq), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = step_fn(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    for _ in range(3):
        one_step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    for _ in range(a.steps):
        loss = one_step()
    loss.item()
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / a.steps
    flops_per_token = 6 * params + 6 * layers * a.seq * hidden
    result = {
        "peer": ("pytorch-compile" if a.compile else "pytorch-eager") +
                ("+gc" if a.gradient_checkpointing else ""),
        "params": params, "micro": a.micro, "seq": a.seq,
        "ms": seconds * 1e3, "tokens_per_s": tokens / seconds,
        "mfu": flops_per_token * tokens / seconds / (a.peak_tflops * 1e12),
        "peak_gib": torch.cuda.max_memory_allocated() / 2**30,
    }
    line = json.dumps(result)
    print(line)
    if a.json:
        with open(a.json, "a") as f:
            f.write(line + "\n")


if __name__ == "__main__":
    main()
