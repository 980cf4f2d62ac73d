#!/usr/bin/env python3
"""The table runtime/bench/speed_compare.sh prints.

    speed_table.py WORLD PEERS.jsonl [VARIANT=DSRUN.json ...]

PEERS.jsonl holds torch_train_speed.py's lines; each DSRUN.json is a
dsrun --json log, its .log beside it. dsrun's rate is the mean of its
lean steps after the first; every row's MFU is counted the peers' way
(6 x parameters plus attention per token, from the peers' own count of
the model), so that the column compares like with like. The last column
is each row's rate against the first peer's (DDP eager on several GPUs,
eager in one process). Peak memory is dsrun's whole process on the
device (context, cuBLAS, NCCL, arena) but PyTorch's allocator peak
(max_memory_allocated: no context, no NCCL buffers), which favours
PyTorch by about 1 GiB.
"""
import json
import sys


def dsrun_row(label, path, world):
    lines = [json.loads(l) for l in open(path) if l.strip()]
    steps = [d for d in lines if d.get("lean") is True and "loss" in d][1:]
    if not steps:
        return None
    ms = sum(d["step_ms"] for d in steps) / len(steps)
    tokens = steps[0]["tokens"] / world
    memory = next((d["memory"]["measured_bytes"] / 2**30 for d in lines
                   if "memory" in d), None)
    return {"peer": "dsrun " + label, "ms": ms, "tokens_per_s": tokens / ms * 1e3,
            "peak_gib": memory}


def main():
    world = int(sys.argv[1])
    peers = []
    try:
        peers = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
    except OSError:
        pass
    rows = []
    for arg in sys.argv[3:]:
        label, path = arg.split("=", 1)
        try:
            row = dsrun_row(label, path, world)
        except (OSError, ValueError):
            row = None
        if row:
            rows.append(row)
        else:
            print(f"dsrun {label}: no lean steps in {path}")
    flops = peers[0]["flops_per_token"] if peers else None
    base = peers[0]["tokens_per_s"] if peers else None
    print(f"{'run':28} {'tokens/s/GPU':>12} {'ms/step':>9} {'MFU':>6} "
          f"{'peak GiB':>9} {'vs ' + peers[0]['peer'] if peers else '':>8}")
    for r in rows + peers:
        tps = r["tokens_per_s"]
        mfu = f"{100 * flops * tps / 989e12:5.1f}%" if flops else "     -"
        mem = f"{r['peak_gib']:9.2f}" if r.get("peak_gib") else "        -"
        ratio = f"{tps / base:7.2f}x" if base else ""
        print(f"{r['peer']:28} {tps:12.0f} {r['ms']:9.2f} {mfu} {mem} {ratio}")


if __name__ == "__main__":
    main()
