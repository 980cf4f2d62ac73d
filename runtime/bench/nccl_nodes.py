"""NCCL's bus bandwidth on one machine, as one node and as several: with
--nodes K, each group of ranks gets an NCCL host id of its own
(NCCL_HOSTID), as dsrun --hostfile gives two nodes on one machine, so
that NCCL carries the traffic between groups over its network transport.

    torchrun --nproc_per_node N runtime/bench/nccl_nodes.py [--nodes K]

Prints one line per collective and size: the time and the bus bandwidth
(nccl-tests' definition: all-gather and reduce-scatter move (n-1)/n of the
total per rank, all-reduce twice that).
"""
import argparse
import os
import time

import torch
import torch.distributed as dist

ap = argparse.ArgumentParser()
ap.add_argument("--nodes", type=int, default=1)
ap.add_argument("--sizes-mib", default="4,16,64,256,1024")
ap.add_argument("--iters", type=int, default=10)
a = ap.parse_args()
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
if a.nodes > 1:
    os.environ["NCCL_HOSTID"] = f"bench-node-{rank * a.nodes // world}"
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("nccl")
for op in ["all_gather", "reduce_scatter", "all_reduce"]:
    for mib in map(int, a.sizes_mib.split(",")):
        total = mib << 20
        full = torch.ones(total // 2, dtype=torch.bfloat16, device="cuda")
        part = torch.ones(total // 2 // world, dtype=torch.bfloat16,
                          device="cuda")

        def call():
            if op == "all_gather":
                dist.all_gather_into_tensor(full, part)
            elif op == "reduce_scatter":
                dist.reduce_scatter_tensor(part, full)
            else:
                dist.all_reduce(full)
        for _ in range(3):
            call()
        torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(a.iters):
            call()
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - start) / a.iters
        factor = (world - 1) / world * (2 if op == "all_reduce" else 1)
        if rank == 0:
            print(f"nodes {a.nodes} ranks {world} {op} {mib} MiB: "
                  f"{seconds * 1e3:.2f} ms, bus {total * factor / seconds / 1e9:.1f} GB/s",
                  flush=True)
dist.destroy_process_group()
