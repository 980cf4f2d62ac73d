//===- Agreement.h - Collective durations agreed among the ranks -*- C++ -*-===//
//
// A symmetric collective (all-reduce, reduce-scatter, all-gather) ends on
// every rank at once, after the last one joined: the shortest duration
// among the ranks is the transfer, the rest of the others' is waiting for
// a peer. A reduce ends on the root after its senders, so for reduces the
// longest is taken (which may still include waiting: an upper bound).
// Nothing exact exists for them: a sender can push a whole bucket into
// NCCL's buffers at the root before the root joins, so even on aligned
// GPU clocks the span from the last rank's start to the last end came out
// above raw NCCL (up to 144 %).
//
// dsrun and dsrun-bench both time their groups this way, so that their
// figures compare.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_AGREEMENT_H
#define DSRUN_AGREEMENT_H

#include <cuda_runtime.h>
#include <nccl.h>

#include <vector>

namespace dsrun {

class RankAgreement {
public:
  /// Durations (ms) of the same N groups as this rank measured them.
  explicit RankAgreement(const std::vector<float> &Ms)
      : Both(2 * Ms.size()), N(Ms.size()) {
    // d and -d travel together: one min-reduction gives both extremes.
    for (size_t I = 0; I < N; ++I) {
      Both[I] = Ms[I];
      Both[N + I] = -Ms[I];
    }
  }

  /// Device memory issue() needs.
  size_t scratchBytes() const { return Both.size() * sizeof(float); }

  /// Queues the exchange on S through Scratch. The caller waits for S
  /// (dsrun polls, so that a dead peer cannot hang it), then collect()s.
  /// Returns the call that failed, or nullptr.
  const char *issue(void *Scratch, ncclComm_t Comm, cudaStream_t S) {
    if (cudaMemcpyAsync(Scratch, Both.data(), scratchBytes(),
                        cudaMemcpyHostToDevice, S) != cudaSuccess)
      return "cudaMemcpyAsync";
    if (ncclAllReduce(Scratch, Scratch, Both.size(), ncclFloat32, ncclMin,
                      Comm, S) != ncclSuccess)
      return "ncclAllReduce";
    return nullptr;
  }

  /// Reads the agreed durations back once the exchange has ended.
  const char *collect(const void *Scratch) {
    if (cudaMemcpy(Both.data(), Scratch, scratchBytes(),
                   cudaMemcpyDeviceToHost) != cudaSuccess)
      return "cudaMemcpy";
    return nullptr;
  }

  /// Group I's duration: the shortest among the ranks, or for a reduce
  /// (Longest) the longest. Before collect(): this rank's own.
  float agreed(size_t I, bool Longest) const {
    return Longest ? -Both[N + I] : Both[I];
  }

private:
  std::vector<float> Both;
  size_t N;
};

} // namespace dsrun

#endif
