#!/usr/bin/env python3
"""Assembles a time table (lib/Plan/TimeTables/GPU.yaml) from what
runtime/bench/time_tables.sh measured:
  - the products' and attention's grids as the benches print them (with
    the epilogues' costs);
  - the other kernel kinds' rates from dsrun --calibration-out files; a
    kind profiled at two sizes gets a fixed time and a rate, fitted on its
    profiled times less what the profile's events add to a launch (the
    profiled step less the same run's lean step, over the launches it
    timed); a kind profiled at one size keeps the calibration's rate, as
    the profile timed it; a kind two runs measured takes the first run's
    rate;
  - from the profiled runs two gaps, each the runs' mean: between two
    kernels of one instruction, the idle time there (nothing waited for)
    over its gaps; between two instructions, the idle time there over
    those gaps, less one kernel gap (an instruction's first kernel counts
    one already);
  - the device's memory rate: the runs' mean of what their AdamW reached;
  - NCCL's collectives by kind and size: dsrun-bench --grid at each rank
    count the machine has (--collectives, one file a count); the old
    table's entries of other counts stay.
How compute and collectives slow each other (sharing) comes from
multi-GPU profiles that this command does not run: --keep-multi-gpu
copies it from the table being replaced, with that table's collectives
of the rank counts not measured now (all of them on a one-GPU machine).
Writes the table to stdout.

    time_table.py --gpu H200 --products P.yaml --attention A.yaml \
        --library-log LOG [--calibration FILE:LOG:NAME]... \
        [--collectives GRID.yaml]... [--keep-multi-gpu OLD.yaml]
"""
import argparse
import datetime
import json
import re
import subprocess


def calibration(path):
    """The kernel rates: (kind, backward, flops, bytes)."""
    rates = []
    for line in open(path):
        m = re.match(r"\s*- \{ kind: ([\w-]+), backward: (\w+), "
                     r"flops_per_sec: (\d+), bytes_per_sec: (\d+) \}", line)
        if m:
            rates.append((m[1], m[2], int(m[3]), int(m[4])))
    return rates


def memory_rate(path):
    """The device AdamW's bandwidth a calibration measured (None: none)."""
    for line in open(path):
        m = re.match(r"memory_bytes_per_sec: (\d+)$", line.strip())
        if m:
            return int(m[1])
    return None


def profiled_kinds(text):
    """The profiled step's kernel kinds besides products and attention:
    {(kind, backward): (calls, us a call, bytes a call)}."""
    kinds = {}
    start = text.find("kernel profile of one step")
    if start < 0:
        return kinds
    for line in text[start:].splitlines()[2:]:
        m = re.match(r"\s+([\w-]+)( \(backward\))?\s+(\d+)\s+([\d.]+)\s+"
                     r"([\d.]+)\s+[\d.]+%\s+[\d.]+\s+([\d.]+)$", line)
        if not m:
            break
        kind, calls, ms, gbps = m[1], int(m[3]), float(m[4]), float(m[6])
        if kind in ("gemm", "attention", "attention-grad") or not calls:
            continue
        # GB/s times ms is MB: bytes a call.
        kinds[(kind, "true" if m[2] else "false")] = (
            calls, ms * 1e3 / calls, gbps * ms * 1e6 / calls)
    return kinds


def event_us(text):
    """What the profile's events add to each launch they time, in us: the
    profiled step less the same run's lean step, over the kernels and
    hook groups the profile timed (0 where the log lacks either). Nsight
    Compute times the Llama 1.1 B's kernels 2.9 us shorter each than the
    profile does; the lean step runs them back to back."""
    step = re.search(r"in kernels of a ([\d.]+) ms step", text)
    # The line says why the steps are not a graph, colons and all.
    lean = re.search(r"lean steps .*?: mean ([\d.]+) ms \(the measured", text)
    if not step or not lean:
        return 0.0
    start = text.find("kernel profile of one step")
    launches = 0
    for line in text[start:].splitlines()[2:]:
        m = re.match(r"\s+[\w-]+(?: \(backward\))?\s+(\d+)\s+[\d.]+\s", line)
        if not m:
            break
        launches += int(m[1])
    hooks = re.search(r"gradient hooks after (\d+) backward", text)
    launches += int(hooks[1]) if hooks else 0
    extra = float(step[1]) - float(lean[1])
    return max(0.0, extra * 1e3 / launches) if launches else 0.0


def fit_latency(points):
    """A kind's fixed time and byte rate from (bytes, us) a call at two or
    more sizes (the smallest at most 2/3 of the largest), by least
    squares: (ns, bytes a second), or None. A negative fixed time means
    no fixed part the sizes can show."""
    sizes = [b for b, _ in points]
    if len(points) < 2 or min(sizes) > max(sizes) * 2 / 3:
        return None
    n = len(points)
    mb = sum(sizes) / n
    mt = sum(t for _, t in points) / n
    sxx = sum((b - mb) ** 2 for b in sizes)
    slope = sum((b - mb) * (t - mt) for b, t in points) / sxx
    fixed = mt - slope * mb
    if slope <= 0 or fixed <= 0:
        return None
    return round(fixed * 1e3), round(1e6 / slope)


def inside_idle(text):
    """The profiled step's idle time inside instructions: (ms, gaps)."""
    m = re.search(r"idle inside instructions: ([\d.]+) ms in (\d+) gaps", text)
    return (float(m[1]), int(m[2])) if m else None


def kernel_gap_ns(text):
    """The profiled step's idle time inside instructions over its gaps."""
    inside = inside_idle(text)
    return inside[0] * 1e6 / inside[1] if inside and inside[1] else None


def instruction_gap_ns(text, kernel_gap):
    """The profiled step's idle between instructions over those gaps,
    beyond the kernel gap their first kernels count: None where the log
    lacks the profile. (The lean step less the profile's kernels would
    count the instructions the profile leaves out, such as the optimizer
    step, as idle.)"""
    between = re.search(r"idle between instructions: ([\d.]+) ms in (\d+) gaps",
                        text)
    if not (between and int(between[2])):
        return None
    idle = float(between[1]) * 1e6 / int(between[2])
    return max(0.0, idle - (kernel_gap or 0))


def query(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--products", required=True)
    ap.add_argument("--attention", required=True)
    ap.add_argument("--library-log", required=True)
    ap.add_argument("--calibration", action="append", default=[])
    ap.add_argument("--collectives", action="append", default=[])
    ap.add_argument("--keep-multi-gpu")
    a = ap.parse_args()
    device = query(["nvidia-smi", "--query-gpu=name,driver_version",
                    "--format=csv,noheader"]).splitlines()[0]
    cuda = re.search(r"release ([\d.]+)", query(["nvcc", "--version"]))
    cudnn = re.search(r"cuDNN: ([^\n]*)", open(a.library_log).read())
    kinds, gaps, names, between, memory, events = {}, [], [], [], [], []
    points = {}
    for spec in a.calibration:
        path, log, name = spec.split(":")
        names.append(name)
        text = open(log).read()
        # Each kind's time a call as the lean step runs it.
        extra = event_us(text)
        events.append(extra)
        for key, (_, us, bytes_) in profiled_kinds(text).items():
            points.setdefault(key, []).append((bytes_, max(0.0, us - extra)))
        gap = kernel_gap_ns(text)
        step_gap = instruction_gap_ns(text, gap)
        if step_gap is not None:
            between.append(step_gap)
        for kind, backward, flops, bytes_ in calibration(path):
            # Products and attention come from the grids.
            if kind in ("gemm", "attention", "attention-grad"):
                continue
            kinds.setdefault((kind, backward), (flops, bytes_))
        if gap:
            gaps.append(gap)
        if rate := memory_rate(path):
            memory.append(rate)
    grids = collective_entries(a.collectives, a.keep_multi_gpu)
    measured = sorted(r for r, (new, _) in grids.items() if new)
    kept = sorted(r for r, (new, _) in grids.items() if not new)
    nccl = ""
    if measured:
        nccl += f"dsrun-bench --grid at {', '.join(map(str, measured))} ranks, "
    if kept:
        nccl += (f"the collectives at {', '.join(map(str, kept))} ranks kept "
                 f"from the table replaced, ")
    source = (f"{device} (name, driver); CUDA {cuda[1] if cuda else 'unknown'}; "
              f"{cudnn[1].strip() if cudnn else 'cuDNN unknown'}; "
              f"dsrun-gemm-bench --grid, dsrun-attention-bench --grid, {nccl}"
              f"dsrun --calibration-out of {', '.join(names) or 'no run'}; "
              f"{datetime.date.today().isoformat()}")
    print(f"# Kernel times dsc plan uses on {a.gpu} without a calibration run,")
    print("# made by runtime/bench/time_tables.sh (include/dsc/Plan/TimeTables.h).")
    print(f"gpu: {a.gpu}")
    print(f"source: {json.dumps(source)}")
    print(open(a.products).read().rstrip())
    print(open(a.attention).read().rstrip())
    # A kind the profiles timed at several sizes: a fixed time a kernel
    # and the rate of its bytes beyond it.
    latencies = {}
    for key, pts in points.items():
        fitted = fit_latency(pts)
        if fitted and key in kinds:
            latencies[key] = fitted[0]
            kinds[key] = (0, fitted[1])
    if kinds:
        print("kernel_rates:")
        for (kind, backward), (flops, bytes_) in sorted(kinds.items()):
            print(f"  - {{ kind: {kind}, backward: {backward}, "
                  f"flops_per_sec: {flops}, bytes_per_sec: {bytes_} }}")
    if latencies:
        if any(events):
            print(f"# Fitted on the profiles' times less what their events add: "
                  f"{', '.join(f'{e:.1f}' for e in events)} us a launch.")
        print("kernel_latencies:")
        for (kind, backward), ns in sorted(latencies.items()):
            print(f"  - {{ kind: {kind}, backward: {backward}, ns: {ns} }}")
    print(f"kernel_gap_ns: {round(sum(gaps) / len(gaps)) if gaps else 0}")
    print("instruction_gap_ns: "
          f"{round(sum(between) / len(between)) if between else 0}")
    if memory:
        print(f"memory_bytes_per_sec: {round(sum(memory) / len(memory))}")
    if grids:
        print("# NCCL's bus GB/s alone by kind and buffer size (dsrun-bench --grid).")
        print("collectives:")
        for ranks in sorted(grids):
            print(grids[ranks][1].rstrip())
    if a.keep_multi_gpu:
        print(block(a.keep_multi_gpu, "sharing:"), end="")


def collective_entries(paths, old):
    """{ranks: (measured now, the entry's text)}: each --collectives file's
    entries, and the old table's of rank counts this machine did not
    measure (a 2-GPU machine keeps a 4-GPU one's)."""
    def entries(text):
        found = {}
        for part in re.split(r"(?m)^(?=  - ranks: )", text):
            m = re.match(r"  - ranks: (\d+)", part)
            if m:
                found[int(m[1])] = part
        return found
    grids = {}
    if old:
        text = block(old, "collectives:")
        grids = {r: (False, e) for r, e in entries(text).items()}
    for path in paths:
        grids.update({r: (True, e) for r, e in entries(open(path).read()).items()})
    return grids


def block(path, key):
    """A top-level block of a table, as it stands there ('' if none)."""
    lines, inside = [], False
    for line in open(path):
        if line.startswith(key):
            inside = True
        elif inside and not line.startswith(" "):
            break
        if inside:
            lines.append(line if line.endswith("\n") else line + "\n")
    return "".join(lines)


if __name__ == "__main__":
    main()
