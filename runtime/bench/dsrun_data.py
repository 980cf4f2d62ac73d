"""Token files and the sample order dsrun reads them in (runtime/src/TokenData.h).

The PyTorch reference trainer reads the same samples in the same order
through this module, so that per-step losses can be compared:

    tokens = read_tokens("train.bin")
    sampler = Sampler(len(tokens), seq, seed)
    x, y = batch(tokens, sampler, first_sample, rows, seq)

Run as a script it prints shuffled_windows(5, 1, 0) and
shuffled_windows(10, 1234, 3), which dsrunHostTests checks too.
"""
import sys

import numpy as np

LLMC_MAGIC = 20240520
LLMC_WIDE_MAGIC = 20240801  # llm.c's uint32 files (its Llama 3 data), version 7
MASK = (1 << 64) - 1


def read_tokens(path):
    """The ids of a nanoGPT (raw uint16) or llm.c (headered) token file."""
    raw = np.fromfile(path, dtype=np.uint8)
    if raw.size >= 1024:
        header = raw[:1024].view(np.int32)
        if header[0] in (LLMC_MAGIC, LLMC_WIDE_MAGIC):
            dtype = {1: np.uint16, 2: np.uint32, 7: np.uint32}[int(header[1])]
            count = int(header[2])
            return raw[1024:].view(dtype)[:count]
    return raw.view(np.uint16)


def write_tokens(path, ids, llmc=False):
    ids = np.asarray(ids)
    if not llmc:
        ids.astype(np.uint16).tofile(path)
        return
    wide = int(ids.max(initial=0)) > 65535
    header = np.zeros(256, dtype=np.int32)
    header[:3] = [LLMC_WIDE_MAGIC, 7, ids.size] if wide else \
        [LLMC_MAGIC, 1, ids.size]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(ids.astype(np.uint32 if wide else np.uint16).tobytes())


def _splitmix(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def shuffled_windows(n, seed, epoch):
    order = list(range(n))
    state = (seed ^ (epoch * 0xD1B54A32D192ED03)) & MASK
    for i in range(n - 1, 0, -1):
        state, r = _splitmix(state)
        j = r % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


class Sampler:
    """Global sample g reads window order[g % W] of epoch g // W."""

    def __init__(self, tokens, seq, seed):
        self.windows = (tokens - 1) // seq if tokens > seq else 0
        self.seq, self.seed = seq, seed
        self.epoch, self.order = None, None

    def start(self, g):
        epoch = g // self.windows
        if epoch != self.epoch:
            self.order = shuffled_windows(self.windows, self.seed, epoch)
            self.epoch = epoch
        return self.order[g % self.windows] * self.seq


def batch(tokens, sampler, first, rows, seq):
    """Inputs and next-token targets of samples first .. first + rows - 1."""
    x = np.empty((rows, seq), dtype=np.int64)
    y = np.empty((rows, seq), dtype=np.int64)
    for r in range(rows):
        s = sampler.start(first + r)
        window = tokens[s:s + seq + 1].astype(np.int64)
        x[r], y[r] = window[:-1], window[1:]
    return x, y


def sample_index(step, micro, rank, row, grad_accum, world, micro_batch):
    """The global sample dsrun's rank reads at (step >= 1, micro, row)."""
    return ((((step - 1) * grad_accum + micro) * world + rank) * micro_batch
            + row)


if __name__ == "__main__":
    print(" ".join(map(str, shuffled_windows(5, 1, 0))))
    print(" ".join(map(str, shuffled_windows(10, 1234, 3))))
    sys.exit(0)
