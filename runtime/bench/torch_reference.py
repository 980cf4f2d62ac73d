#!/usr/bin/env python3
"""The PyTorch run dsrun's training is checked against.

    python3 runtime/bench/torch_reference.py --model DIR --data TOKENS.bin \
        --ds-config ds_config.json --seq 1024 --world 2 --steps 200 \
        [--gpus-per-node G] [--seed 1234] [--json OUT.jsonl]
        [--val-data VAL.bin [--eval-every N] [--eval-batches K]]

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
    lr, betas, eps and weight decay; for type "Adam" with adam_w_mode
    false (the decay added to the gradient) or bias_correction false,
    FusedAdam's step written out (Adam below);
  - gradient_allreduce_op "sum": each micro loss divided by grad_accum
    only, so the gradient is the sum over ranks that the reduction gives;
  - the config's scheduler (ds_schedules.py) and gradient_clipping
    (DeepSpeed's default 0, no clipping, when absent), clipping the global
    norm of the reduced fp32 gradients as DeepSpeed does;
  - with bf16_master_weights_and_grads (and bf16_optimizer_states), the
    masters, their gradients and the moments in bf16: FusedAdam's fp32
    arithmetic stored back rounded, the clipping factor applied to the bf16
    gradients where they lie (clip_in_place), as DeepSpeed does;
  - bf16 when the config enables it; fp16 likewise (fp32 masters), with
    DeepSpeed's loss scaler (DynamicLossScaler below): the loss scaled
    before backward, a step whose gradients hold an inf or NaN skipped
    (no optimizer or scheduler step), the others divided by the scale as
    the scaler stands after its update (DeepSpeed's ZeRO optimizers update
    first, then unscale); else fp32. Micro batch and accumulation from the
    config;
  - ZeRO++ qgZ (zero_quantized_gradients at stage 3) over nodes of
    --gpus-per-node G ranks (by default one node: no effect): DeepSpeed
    leaves each gradient it quantizes (two or more dimensions, elements
    a multiple of twice the world) summed over the ranks and divided by
    the nodes, G times the mean; the reference multiplies those by G
    before clipping and the step. The 4-bit rounding itself it leaves
    out: what parts the two runs is the quantization.
Prints one JSON line per step: step, loss (the mean of the micro losses),
ms, tokens/s, and with fp16 the loss scale and whether the step was
skipped. With --val-data, as dsrun: after every --eval-every steps and
the last, the model in eval mode under no_grad over the file's
consecutive windows of seq + 1 tokens, micro batch K of rank R holding
windows (K x world + R) x micro ...; the mean of the micro batches' losses
as {"step", "val_loss"}.
"""
import argparse
import json

import numpy
import os
import sys
import time

import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dsrun_data  # noqa: E402
import ds_schedules  # noqa: E402


class DynamicLossScaler:
    """deepspeed/runtime/fp16/loss_scaler.py's DynamicLossScaler (0.19),
    or a static scale when fp16.loss_scale is not 0."""

    def __init__(self, fp16):
        static = fp16.get("loss_scale", 0)
        self.dynamic = static == 0
        self.scale = float(static) if static else \
            2.0 ** fp16.get("initial_scale_power", 16)
        self.window = fp16.get("loss_scale_window", 1000)
        self.min_scale = fp16.get("min_loss_scale", 1)
        self.delayed_shift = fp16.get("hysteresis", 2)
        self.hysteresis = self.delayed_shift
        self.consecutive = fp16.get("consecutive_hysteresis", False)
        self.iteration, self.last_overflow = 0, -1

    def scale_if_applied(self):
        stable = self.iteration - self.last_overflow - 1
        if self.dynamic and stable > 0 and stable % self.window == 0:
            return self.scale * 2
        return self.scale

    def update(self, overflow):
        if not self.dynamic:
            return
        if overflow:
            if self.delayed_shift <= 1 or self.hysteresis <= 1:
                if self.scale == self.min_scale:
                    raise RuntimeError("overflow at the minimum loss scale")
                self.scale = max(self.scale / 2, self.min_scale)
            else:
                self.hysteresis -= 1
            self.last_overflow = self.iteration
        else:
            if self.consecutive:
                self.hysteresis = self.delayed_shift
            stable = self.iteration - self.last_overflow - 1
            if stable > 0 and stable % self.window == 0:
                if not self.consecutive:
                    self.hysteresis = self.delayed_shift
                self.scale *= 2
        self.iteration += 1


class Adam:
    """DeepSpeed's FusedAdam step (multi_tensor_adam): in adam_w_mode the
    decay is decoupled, else added to the gradient (L2); bias correction
    optional. The step and scheduler protocol of torch.optim."""

    def __init__(self, params, lr, betas, eps, weight_decay, adam_w_mode,
                 bias_correction):
        self.params = params
        self.param_groups = [{"lr": lr, "betas": tuple(betas)}]
        self.eps, self.decay = eps, weight_decay
        self.adam_w_mode, self.bias_correction = adam_w_mode, bias_correction
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]
        self.t = 0

    @torch.no_grad()
    def step(self):
        self.t += 1
        lr = self.param_groups[0]["lr"]
        b1, b2 = self.param_groups[0]["betas"]
        c1 = 1 - b1 ** self.t if self.bias_correction else 1.0
        c2 = 1 - b2 ** self.t if self.bias_correction else 1.0
        for p, m, v in zip(self.params, self.m, self.v):
            if p.grad is None:
                continue
            # FusedAdam's arithmetic is fp32 whatever it steps; bf16
            # weights and moments are stored back rounded.
            p32, m32, v32 = p.float(), m.float(), v.float()
            g = p.grad.float()
            if not self.adam_w_mode:
                g = g + self.decay * p32
            m32.mul_(b1).add_(g, alpha=1 - b1)
            v32.mul_(b2).addcmul_(g, g, value=1 - b2)
            update = (m32 / c1) / ((v32 / c2).sqrt() + self.eps)
            if self.adam_w_mode:
                update = update + self.decay * p32
            p32.sub_(lr * update)
            if p32 is not p:
                p.copy_(p32)
                m.copy_(m32)
                v.copy_(v32)


def clip_in_place(params, clip):
    """DeepSpeed's unscale_and_clip_grads on bf16 gradients: the global
    norm in fp32, and past the limit each gradient scaled where it lies,
    rounded back to bf16. Returns the norm."""
    norm = float(torch.sqrt(sum(p.grad.float().pow(2).sum() for p in params
                                if p.grad is not None)))
    factor = (norm + 1e-6) / clip
    if factor > 1:
        for p in params:
            if p.grad is not None:
                p.grad.mul_(1.0 / factor)
    return norm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--ds-config", required=True)
    ap.add_argument("--world", type=int, default=1)
    ap.add_argument("--gpus-per-node", type=int, default=0)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--json")
    # Another attention kernel gives PyTorch's own noise floor: the same
    # training, rounded differently (docs/training.md).
    ap.add_argument("--attn", default="sdpa", choices=["sdpa", "eager"])
    ap.add_argument("--val-data")
    ap.add_argument("--eval-every", type=int, default=0)
    ap.add_argument("--eval-batches", type=int, default=0)
    a = ap.parse_args()
    cfg = json.load(open(a.ds_config))
    opt_params = cfg.get("optimizer", {}).get("params", {})
    lr0 = opt_params.get("lr", 1e-3)
    betas0 = opt_params.get("betas", [0.9, 0.999])
    sched = cfg.get("scheduler", {})
    clip = cfg.get("gradient_clipping", 0.0)
    # engine.py: type "AdamW" decouples whatever adam_w_mode says.
    kind = cfg.get("optimizer", {}).get("type", "AdamW").lower()
    adam_w_mode = kind == "adamw" or opt_params.get("adam_w_mode", True)
    bias_correction = opt_params.get("bias_correction", True)
    average = cfg.get("gradient_allreduce_op", "mean").lower() != "sum"
    micro = cfg["train_micro_batch_size_per_gpu"]
    accum = cfg.get("gradient_accumulation_steps", 1)
    bf16 = cfg.get("bf16", {}).get("enabled", False)
    # bf16_master_weights_and_grads with bf16_optimizer_states: ZeRO's
    # partition, its gradients and FusedAdam's moments in bf16.
    bf16_master = bf16 and cfg["bf16"].get("bf16_master_weights_and_grads",
                                           False)
    fp16 = cfg.get("fp16", {}).get("enabled", False)
    scaler = DynamicLossScaler(cfg["fp16"]) if fp16 else None
    zero = cfg.get("zero_optimization", {})
    per_node = a.gpus_per_node or a.world
    qgz = (zero.get("stage") == 3 and zero.get("zero_quantized_gradients")
           and per_node < a.world)

    dev = torch.device("cuda")
    dtype = torch.bfloat16 if bf16 else torch.float16 if fp16 else \
        torch.float32
    model = transformers.AutoModelForCausalLM.from_pretrained(
        a.model, torch_dtype=torch.float32, attn_implementation=a.attn)
    model.config.use_cache = False
    model.to(dev, dtype).train()
    params = [p for p in model.parameters() if p.requires_grad]
    master_dtype = torch.bfloat16 if bf16_master else torch.float32
    master = [p.detach().to(master_dtype).clone().requires_grad_(True)
              for p in params]
    if adam_w_mode and bias_correction and not bf16_master:
        opt = torch.optim.AdamW(master, lr=lr0, betas=tuple(betas0),
                                eps=opt_params.get("eps", 1e-8),
                                weight_decay=opt_params.get("weight_decay",
                                                            0.0),
                                foreach=False)
    else:
        opt = Adam(master, lr0, betas0, opt_params.get("eps", 1e-8),
                   opt_params.get("weight_decay", 0.0), adam_w_mode,
                   bias_correction)

    tokens = dsrun_data.read_tokens(a.data)
    sampler = dsrun_data.Sampler(len(tokens), a.seq, a.seed)
    vocab = model.get_output_embeddings().weight.shape[0]
    scale = 1.0 / (accum * a.world) if average else 1.0 / accum
    out = open(a.json, "w") if a.json else None
    val = dsrun_data.read_tokens(a.val_data) if a.val_data else None

    def evaluate(step):
        windows = (len(val) - 1) // a.seq
        batches = a.eval_batches or windows // (micro * a.world)
        model.eval()
        losses = []
        with torch.no_grad():
            for k in range(batches):
                for r in range(a.world):
                    rows = [((k * a.world + r) * micro + i) * a.seq
                            for i in range(micro)]
                    w = torch.from_numpy(numpy.stack(
                        [val[s:s + a.seq + 1] for s in rows]).astype(
                            numpy.int64)).to(dev)
                    logits = model(input_ids=w[:, :-1]).logits.float()
                    losses.append(torch.nn.functional.cross_entropy(
                        logits.reshape(-1, vocab), w[:, 1:].reshape(-1)))
        model.train()
        line = {"step": step, "val_loss": float(torch.stack(losses).mean())}
        print(json.dumps(line), flush=True)
        if out:
            out.write(json.dumps(line) + "\n")

    applied = 0  # Optimizer steps taken: the scheduler's count too.
    for step in range(1, a.steps + 1):
        loss_scale = scaler.scale if scaler else 1.0
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
                (loss * (scale * loss_scale)).backward()
                losses.append(loss.detach())
        overflow = scaler is not None and not all(
            bool(torch.isfinite(p.grad).all()) for p in params
            if p.grad is not None)
        divisor = scaler.scale_if_applied() if scaler else 1.0
        if scaler:
            scaler.update(overflow)
        for p, q in zip(params, master):
            q.grad = (p.grad.float() / divisor).to(master_dtype) \
                if p.grad is not None else None
            if qgz and q.grad is not None and q.grad.dim() >= 2 and \
                    q.grad.numel() % (2 * a.world) == 0:
                q.grad.mul_(per_node)
        lr, b1, b2 = ds_schedules.hyper(sched.get("type"), sched.get("params"),
                                        applied + 1, lr0, betas0[0], betas0[1])
        for g in opt.param_groups:
            g["lr"], g["betas"] = lr, (b1, b2)
        norm = None
        if not overflow:
            if clip > 0 and bf16_master:
                norm = clip_in_place(master, clip)
            elif clip > 0:
                norm = float(torch.nn.utils.clip_grad_norm_(master, clip))
            opt.step()
            applied += 1
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
        if scaler:
            line["loss_scale"], line["skipped"] = loss_scale, overflow
        print(json.dumps(line), flush=True)
        if out:
            out.write(json.dumps(line) + "\n")
        if val is not None and (step == a.steps or (
                a.eval_every and step % a.eval_every == 0)):
            evaluate(step)
    if out:
        out.close()


if __name__ == "__main__":
    main()
