#!/usr/bin/env python3
"""Loads a dsrun checkpoint into transformers and computes a step's loss.

    python3 runtime/bench/checkpoint_loss.py CKPT_DIR --data TOKENS.bin \
        --ds-config ds_config.json --seq 256 --step N [--world 1] \
        [--seed 1234] [--expect LOSS]

CKPT_DIR is a global_stepK directory of dsrun --save (model.safetensors
and config.json). The loss is the mean over the micro steps and ranks of
step N's samples (dsrun_data.py), with the weights as they stand after
step K: for N = K + 1 it is the loss dsrun reports for step N, which
--expect compares (prints the relative difference; exits 1 above 1 %).
"""
import argparse
import json
import os
import sys

import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dsrun_data  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("--data", required=True)
    ap.add_argument("--ds-config", required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--step", type=int, required=True)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--expect", type=float)
    a = ap.parse_args()
    cfg = json.load(open(a.ds_config))
    micro = cfg["train_micro_batch_size_per_gpu"]
    accum = cfg.get("gradient_accumulation_steps", 1)
    dtype = torch.bfloat16 if cfg.get("bf16", {}).get("enabled") else \
        torch.float16 if cfg.get("fp16", {}).get("enabled") else torch.float32
    model = transformers.AutoModelForCausalLM.from_pretrained(
        a.checkpoint, torch_dtype=dtype, attn_implementation="sdpa")
    model.to("cuda").eval()
    tokens = dsrun_data.read_tokens(a.data)
    sampler = dsrun_data.Sampler(len(tokens), a.seq, a.seed)
    vocab = model.get_output_embeddings().weight.shape[0]
    losses = []
    with torch.no_grad():
        for m in range(accum):
            for r in range(a.world):
                first = dsrun_data.sample_index(a.step, m, r, 0, accum,
                                                a.world, micro)
                x, y = dsrun_data.batch(tokens, sampler, first, micro, a.seq)
                logits = model(input_ids=torch.from_numpy(x).cuda()).logits
                losses.append(torch.nn.functional.cross_entropy(
                    logits.float().reshape(-1, vocab),
                    torch.from_numpy(y).cuda().reshape(-1)))
    loss = float(torch.stack(losses).mean())
    print(f"transformers loads {a.checkpoint}: step {a.step} loss {loss:.5f}",
          end="")
    if a.expect is None:
        print()
        return 0
    rel = abs(loss - a.expect) / abs(a.expect)
    print(f", dsrun {a.expect:.5f}, diff {100 * rel:.3f}%")
    return 0 if rel <= 0.01 else 1


if __name__ == "__main__":
    sys.exit(main())
