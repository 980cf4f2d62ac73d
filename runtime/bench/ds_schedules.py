"""DeepSpeed's learning-rate schedules (deepspeed.runtime.lr_schedules,
0.19.6) for the PyTorch reference: the rate and betas of optimizer step k
(from 1), which runs at the scheduler's last_batch_iteration k - 2 (the
constructor sets the first step's rate; step() follows every optimizer
step). include/dsc/LrSchedule.h is the same arithmetic in C++.
"""
import math


def _warmup(params, i, w):
    if params.get("warmup_type", "log") == "linear":
        return i / w
    return math.log(i + 1) / math.log(w)


def hyper(kind, params, step, lr, beta1, beta2):
    i = step - 2
    p = params or {}
    if kind in ("WarmupLR", "WarmupDecayLR"):
        lo = p.get("warmup_min_lr", 0.0)
        hi = p.get("warmup_max_lr", lr if kind == "WarmupLR" else 0.001)
        if i < 0:
            return lo, beta1, beta2
        w = max(2, p.get("warmup_num_steps", 1000))
        if i < w:
            g = _warmup(p, i, w)
        elif kind == "WarmupLR":
            g = 1.0
        else:
            t = p["total_num_steps"]
            g = max(0.0, (t - i) / max(1.0, t - w))
        return lo + (hi - lo) * g, beta1, beta2
    if kind == "WarmupCosineLR":
        if i < 0:
            return 0.0, beta1, beta2
        w = max(2, p.get("warmup_num_steps", 1000))
        if i < w:
            m = p.get("warmup_min_ratio", 0.0)
            r = m + _warmup(p, i, w) * (1 - m)
        else:
            t = p["total_num_steps"]
            prog = min(1.0, (i - w + 1) / max(1, t - w))
            c = p.get("cos_min_ratio", 1e-4)
            r = max(0.0, c + (1 - c) * (1 + math.cos(math.pi * prog)) / 2)
        return lr * r, beta1, beta2
    if kind == "LRRangeTest":
        lo = p.get("lr_range_test_min_lr", 1e-3)
        interval = (i + 1) / p.get("lr_range_test_step_size", 2000)
        if p.get("lr_range_test_staircase", False):
            interval = math.floor(interval)
        return lo * (1 + p.get("lr_range_test_step_rate", 1.0) * interval), \
            beta1, beta2
    if kind == "OneCycle":
        lo, hi = p["cycle_min_lr"], p["cycle_max_lr"]
        first = float(p.get("cycle_first_step_size", 2000))
        second = float(p.get("cycle_second_step_size") or first)
        s1 = p.get("cycle_first_stair_count", 0)
        s2 = p.get("cycle_second_stair_count")
        s2 = s1 if s2 is None else s2
        decay_step = p.get("decay_step_size", 0)
        mom = p.get("cycle_momentum", True)
        mlo, mhi = p.get("cycle_min_mom", 0.8), p.get("cycle_max_mom", 0.9)
        b2 = 0.99 if mom else beta2
        if i < 0:
            return lo, (mlo if mom else beta1), b2
        total = first + second
        ratio = first / total
        if i < total:
            batch = i + 1
            cycle = math.floor(1 + batch / total)
            x = 1.0 + batch / total - cycle
            if x <= ratio:
                scale, stairs = x / ratio, s1
            else:
                scale, stairs = (x - 1) / (ratio - 1), s2
            if stairs > 0:
                ci = batch % total
                pos = ci * stairs / first if ci <= first else \
                    (total - ci) * stairs / second
                scale = math.floor(pos) / stairs
            return lo + (hi - lo) * scale, \
                (mhi - (mhi - mlo) * scale if mom else beta1), b2
        d = i - total + 1
        lr_rate, mom_rate = p.get("decay_lr_rate", 0.0), p.get("decay_mom_rate", 0.0)
        out_lr = lo if decay_step == 0 or lr_rate == 0 else \
            lo / (1 + lr_rate * d / decay_step)
        b1 = mhi if decay_step == 0 or mom_rate == 0 else \
            mhi * (1 + mom_rate * d / decay_step)
        return out_lr, (b1 if mom else beta1), b2
    return lr, beta1, beta2
