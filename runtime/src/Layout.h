//===- Layout.h - Where each tensor's elements are, for one rank -*- C++ -*-===//
//
// The plan places buffers; the layout says where inside them each tensor,
// shard and bucket chunk sits for this rank. It is derived from the plan
// alone, with the conventions docs/runtime.md states:
//   stage 0-2  params16 holds the padded flat buffer of trainable
//              parameters (flat order), then the frozen ones;
//   stage 2    grads16_partition holds, whole, the parameters that overlap
//              this rank's partition, in flat order;
//   stage 3    params16 holds the shards of non-persistent parameters
//              unit by unit (then those in no unit, in tensor order) and
//              persistent_params the padded persistent ones in tensor
//              order; partition arrays (master, states, gradients) hold
//              the shards of trainable parameters in partition order; a
//              gathered unit holds its padded tensors in unit order, and
//              its rank-major gather buffer one chunk per rank, each that
//              rank's shards of the unit (as params16 holds them);
//   buckets    stage 0/1 reduce in place on grads16; stage 2 bucket
//              buffers hold the bucket's flat range; stage 3 bucket buffers
//              hold one chunk per rank, each the shards of the bucket's
//              tensors in bucket order.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_LAYOUT_H
#define DSRUN_LAYOUT_H

#include "Synthetic.h"

#include "dsc/PlanFormat.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace dsrun {

constexpr uint64_t NoOffset = ~uint64_t(0);

struct BufferView {
  const dsc::plan::Buffer *B = nullptr;
  uint64_t Offset = 0, Bytes = 0;
  explicit operator bool() const { return B != nullptr; }
};

/// The elements [Begin, End) of a tensor that this rank updates, and where
/// they sit in its partition arrays.
struct OwnedRange {
  uint32_t Tensor;
  uint64_t Begin, End;
  uint64_t PartitionOffset;
};

struct BucketLayout {
  /// The device buffer the bucket is reduced in: grads16 (stage 0/1), the
  /// gradient's own value buffer (a gradient reduced alone, where the
  /// backward kernel left it) or its ipg bucket buffer; its byte offset
  /// in the device arena; and the element type there.
  std::string Source;
  uint64_t SourceOffset = 0;
  ElementType SourceType = ElementType::BF16;
  /// Stage 0-2: the bucket's range of the flat buffer, and the flat
  /// element at which Source starts.
  uint64_t FlatBegin = 0, FlatEnd = 0, SourceOrigin = 0;
  /// Stage 3: elements per rank chunk in Source, and each segment's offset
  /// in it.
  uint64_t ChunkElems = 0;
  std::vector<uint64_t> ChunkOffset;
};

class Layout {
public:
  Layout(const dsc::plan::Plan &P, uint32_t Rank);

  const dsc::plan::Plan &P;
  uint32_t Rank, World, Class, Stage;
  ElementType Param, Comm, GradAccum;

  BufferView buffer(const std::string &Name) const;
  /// The buffer of a compute value (plan::Value::Buffer).
  BufferView valueBuffer(uint32_t Value) const;

  /// Stage 0-2: a tensor's element offset in params16.
  uint64_t paramOffset(uint32_t T) const { return ParamOffset[T]; }
  /// Stage 1/2: this rank's flat range [PartitionBegin, PartitionEnd).
  uint64_t PartitionBegin = 0, PartitionEnd = 0;
  /// Stage 2: a tensor's offset in grads16_partition, NoOffset if it does
  /// not touch this partition.
  uint64_t gradPartitionOffset(uint32_t T) const { return GradPartition[T]; }
  /// Stage 3: a tensor's shard in params16 (non-persistent) or its padded
  /// copy in persistent_params.
  uint64_t shardOffset(uint32_t T) const { return ShardOffset[T]; }
  uint64_t persistentOffset(uint32_t T) const { return PersistentOffset[T]; }
  /// Stage 3: a trainable tensor's shard in the partition arrays.
  uint64_t orderOffset(uint32_t T) const { return OrderOffset[T]; }
  /// Stage 3: a tensor's padded copy in a gathered unit.
  uint64_t unitOffset(uint32_t Unit, uint32_t T) const;
  uint64_t unitElems(uint32_t Unit) const { return UnitElems[Unit]; }
  /// Stage 3: a rank's shards of a unit, the chunk it adds to the gather,
  /// and a tensor's shard inside that chunk.
  uint64_t chunkElems(uint32_t Unit) const { return UnitChunk[Unit]; }
  uint64_t chunkOffset(uint32_t Unit, uint32_t T) const;
  /// Stage 3: the buffer a unit is all-gathered into: its rank-major
  /// "gather.U", or "unit.U" itself when the two orders agree.
  std::string gatherTarget(uint32_t Unit) const;

  std::vector<OwnedRange> Owned;
  /// Partition-array element ranges of each sub-group.
  std::vector<std::pair<uint64_t, uint64_t>> SubGroupRange;
  std::vector<BucketLayout> Buckets;
  /// The fetch unit of each tensor (stage 3), NoIndex when persistent.
  std::vector<uint32_t> UnitOfTensor;
  /// The value holding each tensor's gradient as the backward leaves it
  /// (NoIndex: frozen, or read by nothing).
  std::vector<uint32_t> GradValue;
  /// Each compute value's byte offset in the device arena: its own buffer,
  /// or for a parameter where the ZeRO layout keeps it (params16, its
  /// stage-3 unit, persistent_params); NoOffset where it has none.
  std::vector<uint64_t> ValueOffset;

private:
  std::unordered_map<std::string, const dsc::plan::Buffer *> ByName;
  std::vector<uint64_t> ParamOffset, GradPartition, ShardOffset,
      PersistentOffset, OrderOffset, UnitElems, UnitChunk;
  /// Per unit: a tensor's offset in the unit and in a rank's chunk.
  std::vector<std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>>>
      UnitTensorOffset;
};

/// Reads and checks (checkPlan) a plan.bin. On failure sets Error and
/// Unreadable when the file could not be opened at all.
std::optional<dsc::plan::Plan> loadPlanFile(const std::string &Path,
                                            std::string &Error,
                                            bool &Unreadable);

/// Checks that every buffer dsrun reads or writes for this rank exists, in
/// the memory space it expects, with the bytes it will touch: a plan made
/// by dsc always passes, an edited one (dsc show can turn YAML back into
/// plan.bin) gets a message instead of writes outside a buffer. Returns ""
/// or the first shortfall.
std::string checkRuntimeNeeds(const Layout &L);

/// Checks that memory the arena reuses is never written before its last
/// reader has finished: for every two buffers of a rank class that share
/// bytes, the first instruction of the later one must happen after the
/// last instruction of the earlier one (by stream order and waits).
/// Returns "" or the first violation.
std::string checkMemoryOrdering(const dsc::plan::Plan &P, size_t Class);

} // namespace dsrun

#endif
