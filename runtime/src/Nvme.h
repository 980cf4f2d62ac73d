//===- Nvme.h - Swap files for NVMe offload, through direct I/O -*- C++ -*-===//
//
// ZeRO-Infinity keeps optimizer state (and at stage 3 the parameter shards)
// in files on NVMe and moves them through a few pinned buffers. A SwapFile
// is one such file: reads and writes are cut into blocks and issued by
// several threads at once (the queue depth DeepSpeed's aio gives), with
// O_DIRECT where the file system allows it, so the page cache neither
// slows the transfer nor hides the drive's real speed. Pieces of a request
// that are not block-aligned go through a second, buffered descriptor.
//
// Host-only: tested in CI on plain files.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_NVME_H
#define DSRUN_NVME_H

#include "Synthetic.h"

#include "dsc/PlanFacts.h"
#include "dsc/PlanFormat.h"

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace dsrun {

class SwapFile {
public:
  /// Direct I/O needs addresses, offsets and sizes in multiples of this.
  static constexpr uint64_t Alignment = dsc::plan::SwapAlignment;

  SwapFile() = default;
  SwapFile(const SwapFile &) = delete;
  SwapFile &operator=(const SwapFile &) = delete;
  ~SwapFile();

  /// Creates (or truncates) Path with Bytes of space. Threads requests run
  /// at once, each of BlockBytes. Returns false and sets Error on failure.
  bool create(const std::string &Path, uint64_t Bytes, unsigned Threads,
              uint64_t BlockBytes, std::string &Error);

  bool read(void *Dst, uint64_t Offset, uint64_t Bytes, std::string &Error);
  bool write(const void *Src, uint64_t Offset, uint64_t Bytes,
             std::string &Error);

  /// Whether O_DIRECT was accepted (tmpfs, for one, refuses it).
  bool direct() const { return DirectFd >= 0; }
  /// Bytes moved so far with O_DIRECT and through the page cache.
  uint64_t directBytes() const { return DirectBytes; }
  uint64_t bufferedBytes() const { return BufferedBytes; }
  const std::string &path() const { return Path; }
  uint64_t size() const { return Bytes; }

private:
  bool transfer(char *Memory, uint64_t Offset, uint64_t Bytes, bool Write,
                std::string &Error);

  std::string Path;
  int Fd = -1, DirectFd = -1;
  uint64_t Bytes = 0, BlockBytes = 1 << 20;
  unsigned Threads = 8;
  std::atomic<uint64_t> DirectBytes{0}, BufferedBytes{0};
};

/// Where a rank's swapped data sits in its files. The optimizer file holds,
/// per sub-group, its fp32 master weights, first and second moments; the
/// parameter file holds, per fetch unit, the shards of its tensors in unit
/// order, so that one read brings a whole unit. Every region starts on an
/// aligned offset. The files are dsrun's own: the plan places what passes
/// through memory, not what lies on the drive.
struct SwapLayout {
  explicit SwapLayout(const dsc::plan::Plan &P);

  /// Sub-group G's region K (0 master, 1 first moment, 2 second moment).
  uint64_t optimizerRegion(uint32_t G, unsigned K) const {
    return OptimizerBase[G] + K * RegionStride[G];
  }
  uint64_t OptimizerFileBytes = 0;

  /// A fetch unit's shards, and a tensor's shard inside them.
  uint64_t unitBase(uint32_t U) const { return UnitBase[U]; }
  uint64_t unitBytes(uint32_t U) const { return UnitBytes[U]; }
  uint64_t shardInUnit(uint32_t T) const { return ShardInUnit[T]; }
  /// The fetch unit a tensor's shard is swapped with.
  uint32_t unitOf(uint32_t T) const { return UnitOfTensor[T]; }
  /// Where a tensor's shard starts in the parameter file.
  uint64_t shardOffset(uint32_t T) const {
    return UnitBase[UnitOfTensor[T]] + ShardInUnit[T];
  }
  uint64_t ParamFileBytes = 0;
  uint64_t LargestUnitBytes = 0;

private:
  std::vector<uint64_t> OptimizerBase, RegionStride, UnitBase, UnitBytes,
      ShardInUnit;
  std::vector<uint32_t> UnitOfTensor;
};

} // namespace dsrun

#endif
