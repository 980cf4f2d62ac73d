"""Runs a plan's step workload through PyTorch, the peer dsrun is measured
against on the GPU machine.

dsrun-bench --plan P --workload W writes the step as the GEMMs synthetic
compute runs and the collective calls dsrun makes. This script issues the
same collectives through torch.distributed (ProcessGroupNCCL), first alone,
then beside the same GEMMs (torch.matmul on a low-priority stream, over and
over until the collectives have ended), and prints per kind the bus bandwidth in
the format dsrun-bench uses, each line prefixed with "torch":

    python3 -m torch.distributed.run --nproc-per-node 2 \\
        runtime/bench/torch_peer.py W

A group of several all-gathers, reduce-scatters or all-reduces is issued
as one NCCL group through PyTorch's coalescing manager, as dsrun issues
it; reduces one after another, as DeepSpeed's stage 1 and 2 issue them.
Before its first group each pass lines the ranks up, and each group's
time is the shortest among the ranks (the longest for reduces), as
dsrun-bench and dsrun take theirs. The GEMMs' inputs are zeros, as
dsrun-bench's are.
"""

import argparse
import inspect
import os
import sys

import torch
import torch.distributed as dist

TYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}

# PyTorch 2.1 and later: one NCCL group for several same-kind calls.
COALESCING = hasattr(dist, "_coalescing_manager") and \
    "async_ops" in inspect.signature(dist._coalescing_manager).parameters

_warned = set()


def warn_once(message):
    if message not in _warned:
        _warned.add(message)
        print(message, file=sys.stderr)


def read_workload(path):
    gemms, groups, gemm_type = [], [], torch.bfloat16
    with open(path) as f:
        for number, line in enumerate(f, 1):
            words = line.split()
            if not words:
                continue
            if words[0] == "#":
                if "in" in words:
                    gemm_type = TYPES[words[words.index("in") + 1]]
                continue
            if words[0] == "gemm" and len(words) == 5:
                gemms.append(tuple(int(w) for w in words[1:]))
            elif words[0] == "group" and len(words) == 1:
                groups.append([])
            elif words[0] == "call" and len(words) == 5 and groups:
                groups[-1].append((words[1], int(words[2]), TYPES[words[3]],
                                   int(words[4])))
            else:
                sys.exit(f"{path}:{number}: not a workload line: {line.strip()}")
    return gemms, groups, gemm_type


def bus_factor(kind, world):
    if world <= 1:
        return 1.0
    if kind == "all-reduce":
        return 2.0 * (world - 1) / world
    if kind == "reduce":
        return 1.0
    return (world - 1) / world


def message_bytes(kind, count, dtype, world):
    size = count * torch.tensor([], dtype=dtype).element_size()
    return size * world if kind in ("all-gather", "reduce-scatter") else size


def bus_bytes(group, world):
    # As dsrun counts it: reduces to several roots move what a
    # reduce-scatter of the same bytes moves.
    several_roots = any(k == "reduce" and r != group[0][3]
                        for k, _, _, r in group)
    return sum(message_bytes(k, c, t, world) *
               bus_factor("reduce-scatter" if several_roots else k, world)
               for k, c, t, r in group)


class Collectives:
    """One buffer per element type, large enough for every call."""

    def __init__(self, groups, world, device):
        need = {}
        for group in groups:
            for kind, count, dtype, _ in group:
                need[dtype] = max(need.get(dtype, 0), count * world)
        self.buffers = {t: torch.zeros(n, dtype=t, device=device)
                        for t, n in need.items()}
        self.world, self.rank = world, dist.get_rank()

    def issue(self, group):
        kinds = {k for k, _, _, _ in group}
        coalesce = len(group) > 1 and len(kinds) == 1 and "reduce" not in kinds
        if coalesce and not COALESCING:
            warn_once("torch_peer: this PyTorch has no coalescing manager "
                      "taking async_ops; a group's calls go one by one")
        if coalesce and COALESCING:
            with dist._coalescing_manager(async_ops=True) as manager:
                self.issue_each(group, async_op=False)
            manager.wait()
        else:
            self.issue_each(group, async_op=True)

    def issue_each(self, group, async_op):
        works = []
        for kind, count, dtype, root in group:
            whole = self.buffers[dtype][:count * self.world]
            mine = whole[self.rank * count:(self.rank + 1) * count]
            if kind == "all-gather":
                w = dist.all_gather_into_tensor(whole, mine, async_op=async_op)
            elif kind == "reduce-scatter":
                w = dist.reduce_scatter_tensor(mine, whole, async_op=async_op)
            elif kind == "all-reduce":
                w = dist.all_reduce(whole[:count], async_op=async_op)
            elif kind == "reduce":
                w = dist.reduce(whole[:count], dst=root, async_op=async_op)
            else:
                sys.exit(f"torch_peer: unknown collective {kind}")
            if w is not None:
                works.append(w)
        # The current stream waits for the collectives, so events on it
        # bracket them.
        for w in works:
            w.wait()


class Gemms:
    """The workload's GEMMs on one input and one output buffer."""

    def __init__(self, shapes, dtype, device):
        self.shapes = shapes
        inputs = max([max(n * k, k * m) for _, m, n, k in shapes] or [1])
        outputs = max([b * m * n for b, m, n, _ in shapes] or [1])
        self.inputs = torch.zeros(inputs, dtype=dtype, device=device)
        self.output = torch.empty(outputs, dtype=dtype, device=device)

    def step(self):
        # Column-major (M x K)(K x N) is row-major (N x K)(K x M): the
        # same flops. The batch reads one input, as dsrun's does.
        for b, m, n, k in self.shapes:
            x = self.inputs[:n * k].view(n, k)
            y = self.inputs[:k * m].view(k, m)
            out = self.output[:b * n * m].view(b, n, m)
            if b == 1:
                torch.matmul(x, y, out=out[0])
            else:
                torch.matmul(x.expand(b, n, k), y.expand(b, k, m), out=out)


def time_groups(groups, issue, reps, stream):
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(len(groups) + 1)]
    with torch.cuda.stream(stream):
        one = torch.zeros(1, device="cuda")
        dist.all_reduce(one)  # Every rank starts together.
        for g, group in enumerate(groups):
            marks[g].record()
            for _ in range(reps):
                issue(group)
        marks[-1].record()
    return marks


def totals(groups, marks, reps, world):
    """Per kind, each group's time agreed among the ranks: the shortest
    (the last rank to join waited for no one), the longest for reduces."""
    mine = [marks[g].elapsed_time(marks[g + 1]) / reps
            for g in range(len(groups))]
    both = torch.tensor(mine + [-m for m in mine], device="cuda")
    dist.all_reduce(both, op=dist.ReduceOp.MIN)
    both = both.tolist()
    by_kind = {}
    for g, group in enumerate(groups):
        ms = -both[len(groups) + g] if group[0][0] == "reduce" else both[g]
        t = by_kind.setdefault(group[0][0], [0, 0.0, 0.0, 0.0])
        t[0] += 1
        t[1] += sum(message_bytes(k, c, d, world) for k, c, d, _ in group)
        t[2] += bus_bytes(group, world)
        t[3] += ms
    return by_kind


def print_totals(title, prefix, by_kind):
    print(title)
    for kind in sorted(by_kind):
        n, size, bus, ms = by_kind[kind]
        print(f"  {prefix}{kind:<15} {n:4d} groups {size / 2**20:10.1f} MiB "
              f"in {ms:8.2f} ms (bus {bus / ms / 1e6 if ms > 0 else 0:.1f} GB/s)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workload")
    parser.add_argument("--priority", choices=["high", "normal"],
                        default="high",
                        help="NCCL stream priority (dsrun's default is high)")
    args = parser.parse_args()
    gemm_shapes, groups, gemm_type = read_workload(args.workload)
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    options = dist.ProcessGroupNCCL.Options()
    options.is_high_priority_stream = args.priority == "high"
    try:
        dist.init_process_group("nccl", pg_options=options, device_id=device)
    except TypeError:  # A PyTorch that names the options otherwise.
        dist.init_process_group("nccl", device_id=device)
        print("torch_peer: NCCL stream priority left at PyTorch's default")
    world, rank = dist.get_world_size(), dist.get_rank()
    if not groups:
        sys.exit("torch_peer: the workload has no collectives")

    coll = Collectives(groups, world, device)
    high = torch.cuda.Stream(priority=-1 if args.priority == "high" else 0)
    reps = 5
    for group in groups:  # Warm-up: NCCL connects, PyTorch caches.
        coll.issue(group)
    marks = time_groups(groups, coll.issue, reps, high)
    torch.cuda.synchronize()
    alone = totals(groups, marks, reps, world)
    if rank == 0:
        print_totals(f"PyTorch {torch.__version__}, the plan's collectives "
                     "alone:", "torch ", alone)

    if gemm_shapes:
        beside_gemms(groups, coll, gemm_shapes, gemm_type, device, high, rank,
                     world)
    dist.destroy_process_group()


def beside_gemms(groups, coll, gemm_shapes, gemm_type, device, high, rank,
                 world):
    """Times each group on the high-priority stream while a low-priority
    stream runs the workload's GEMMs; prints the totals on rank 0."""
    gemms = Gemms(gemm_shapes, gemm_type, device)
    low = torch.cuda.Stream(priority=0)
    with torch.cuda.stream(low):
        gemms.step()  # Warm-up: cuBLAS picks its kernels.
        begin = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        begin.record()
        gemms.step()
        end.record()
    torch.cuda.synchronize()
    step_ms = begin.elapsed_time(end)
    # Two steps of GEMMs queued ahead, then one more each time one ends,
    # until the collectives have: every collective runs beside GEMMs.
    reps = 2
    ahead = [torch.cuda.Event(), torch.cuda.Event()]
    with torch.cuda.stream(low):
        begin.record()
        for event in ahead:
            gemms.step()
            event.record()
    high.wait_event(begin)
    marks = time_groups(groups, coll.issue, reps, high)
    loops, k = 2, 0
    while True:
        ahead[k].synchronize()
        if marks[-1].query():
            break
        with torch.cuda.stream(low):
            gemms.step()
            ahead[k].record()
        loops, k = loops + 1, k ^ 1
    torch.cuda.synchronize()
    beside = totals(groups, marks, reps, world)
    if rank == 0:
        print_totals(f"the plan's collectives through PyTorch beside its "
                     f"GEMMs ({step_ms:.2f} ms of GEMMs a step alone, run "
                     f"{loops} times until they ended):", "torch beside ",
                     beside)


if __name__ == "__main__":
    main()
