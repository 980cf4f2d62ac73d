#!/usr/bin/env python3
"""PyTorch's training speed: the peers dsrun's tokens/s is set beside.

    python3 runtime/bench/torch_train_speed.py --model DIR --micro 16 \
        --seq 1024 [--steps 20] [--compile] [--gradient-checkpointing]
        [--json OUT.jsonl]
    torchrun --nproc-per-node 2 runtime/bench/torch_train_speed.py \
        --parallel ddp|fsdp2 --model DIR --micro 16 --seq 1024 [...]

How people train an HF causal LM in PyTorch today: the model of DIR
(hf_model.py), attention through SDPA (flash), fused AdamW (lr 3e-4,
betas 0.9/0.95, weight decay 0.1), gradient clipping at 1.0, random
tokens (speed does not depend on them). In one process and under DDP the
model is fp32 under bf16 autocast (DDP reduces fp32 gradients); under
FSDP2 (fully_shard on every layer and on the root, as torchtitan does)
parameters are gathered in bf16 and gradients reduced in fp32
(MixedPrecisionPolicy), the fp32 parameters sharded across ranks like
ZeRO 3. With --compile the model goes through torch.compile first (each
layer before it is sharded, under FSDP2); with --gradient-checkpointing
every layer is recomputed in backward (transformers'
gradient_checkpointing_enable, non-reentrant), the peer of dsc plan
--checkpoint-layers. The first three steps warm up and are not counted.

Prints one JSON line (rank 0): tokens/s per GPU, ms per step, peak device
memory of rank 0, and model FLOP utilisation counted as 6 x parameters x
tokens plus attention (6 x layers x seq x hidden per token: QK^T and PV,
forward and backward, causal masking not subtracted), against the dense
bf16 peak given by --peak-tflops (989, H100/H200 SXM).
"""
import argparse
import json
import os
import time

import torch
import transformers


def layers_of(model):
    """The repeated transformer blocks of an HF causal LM."""
    for path in ("transformer.h", "model.layers", "gpt_neox.layers"):
        m = model
        try:
            for part in path.split("."):
                m = getattr(m, part)
            return m
        except AttributeError:
            pass
    raise SystemExit("torch_train_speed.py: no transformer blocks found in "
                     + type(model).__name__)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--micro", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--parallel", choices=["none", "ddp", "fsdp2"],
                    default="none")
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--gradient-checkpointing", action="store_true")
    ap.add_argument("--peak-tflops", type=float, default=989.0)
    ap.add_argument("--json")
    a = ap.parse_args()

    rank, world = 0, 1
    if a.parallel != "none":
        torch.distributed.init_process_group("nccl")
        rank, world = torch.distributed.get_rank(), torch.distributed.get_world_size()
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    torch.manual_seed(0)
    config = transformers.AutoConfig.from_pretrained(a.model)
    model = transformers.AutoModelForCausalLM.from_config(
        config, attn_implementation="sdpa").cuda()
    if a.gradient_checkpointing:
        model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
    params = sum(p.numel() for p in model.parameters())
    autocast = a.parallel != "fsdp2"
    step_fn = model
    if a.parallel == "fsdp2":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                                      reduce_dtype=torch.float32)
        for block in layers_of(model):
            if a.compile:
                block.compile()
            fully_shard(block, mp_policy=policy)
        fully_shard(model, mp_policy=policy)
    elif a.parallel == "ddp":
        step_fn = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=[torch.cuda.current_device()])
        if a.compile:
            step_fn = torch.compile(step_fn)
    elif a.compile:
        step_fn = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95),
                            weight_decay=0.1, fused=True)
    vocab = config.vocab_size
    layers = config.num_hidden_layers
    hidden = config.hidden_size
    tokens = a.micro * a.seq

    def one_step():
        ids = torch.randint(0, vocab, (a.micro, a.seq), device="cuda")
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=autocast):
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
    peer = "pytorch" + ("" if a.parallel == "none" else "-" + a.parallel)
    peer += "-compile" if a.compile else "-eager"
    peer += "+gc" if a.gradient_checkpointing else ""
    result = {
        "peer": peer, "world": world,
        "params": params, "micro": a.micro, "seq": a.seq,
        "flops_per_token": flops_per_token,
        "ms": seconds * 1e3, "tokens_per_s": tokens / seconds,
        "mfu": flops_per_token * tokens / seconds / (a.peak_tflops * 1e12),
        "peak_gib": torch.cuda.max_memory_allocated() / 2**30,
    }
    if rank == 0:
        line = json.dumps(result)
        print(line)
        if a.json:
            with open(a.json, "a") as f:
                f.write(line + "\n")
    if a.parallel != "none":
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
