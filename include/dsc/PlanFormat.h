//===- PlanFormat.h - The plan: its IR and its binary file ------*- C++ -*-===//
//
// A plan says, for one (config, model, world size), what every rank holds,
// when every byte moves and where every buffer lives. dsc writes it; dsrun
// executes it. This header is all the two share, so it depends on nothing
// but the C++17 standard library: the runtime builds where there is no
// LLVM, RapidJSON or ONNX.
//
// Each struct lists its fields once, in `visit`, with the names the YAML
// form uses; the binary writer, the binary reader and the YAML mapping
// (lib/Plan/PlanYAML.cpp) all walk that list, so they cannot disagree.
//
// plan.bin layout (little-endian; docs/plan-format.md):
//   header   "DSCPLAN\0", u32 version, u32 section count, u64 file size,
//            u64 FNV-1a checksum of every byte after the header
//   sections table: per section u32 id, u32 reserved, u64 offset, u64 size
//   sections, each the visit() encoding of one part of the plan
// A reader skips sections it does not know.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PLANFORMAT_H
#define DSC_PLANFORMAT_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace dsc::plan {

constexpr char FileMagic[8] = {'D', 'S', 'C', 'P', 'L', 'A', 'N', '\0'};
/// Bumped whenever an existing section's encoding changes; new sections
/// do not need a bump (old readers skip them).
constexpr uint32_t FormatVersion = 2;
constexpr uint32_t NoIndex = std::numeric_limits<uint32_t>::max();
/// Ranks of different layouts beyond this many are merged (see RankClass).
constexpr uint32_t MaxRankClasses = 8;

//===----------------------------------------------------------------------===//
// Enumerations. Each has a names table used by YAML and by reports.
//===----------------------------------------------------------------------===//

#define DSC_PLAN_ENUM(Name, ...)                                               \
  enum class Name : uint8_t { __VA_ARGS__ };

/// Element types. Parameters, gradients and optimizer states are one of
/// the three floating-point ones; the compute program also holds token ids
/// and targets (int32), index and shape values (int64) and masks (uint8).
DSC_PLAN_ENUM(DType, F32, F16, BF16, I32, I64, U8)
inline const char *const DTypeNames[] = {"fp32", "fp16",  "bf16",
                                         "int32", "int64", "uint8"};
inline unsigned dtypeBytes(DType T) {
  switch (T) {
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I64:
    return 8;
  case DType::U8:
    return 1;
  default:
    return 4;
  }
}
inline bool isFloatType(DType T) {
  return T == DType::F32 || T == DType::F16 || T == DType::BF16;
}

DSC_PLAN_ENUM(OffloadDevice, None, CPU, NVMe)
inline const char *const OffloadDeviceNames[] = {"none", "cpu", "nvme"};

DSC_PLAN_ENUM(TensorRole, Trainable, Frozen)
inline const char *const TensorRoleNames[] = {"trainable", "frozen"};

DSC_PLAN_ENUM(Collective, AllReduce, ReduceScatter, AllGather)
inline const char *const CollectiveNames[] = {"all-reduce", "reduce-scatter",
                                              "all-gather"};

/// Where an instruction runs. Compute and Comm are CUDA streams; the copy
/// streams carry offload transfers; Host is CPU work (the offloaded
/// optimizer step, NVMe I/O).
DSC_PLAN_ENUM(Stream, Compute, Comm, CopyIn, CopyOut, Host)
inline const char *const StreamNames[] = {"compute", "comm", "copy-in",
                                          "copy-out", "host"};

/// What an instruction does; its Arg indexes the table named here.
DSC_PLAN_ENUM(InstrKind,
              Forward,         ///< Arg: op. Forward compute of one op.
              Backward,        ///< Arg: op. Backward compute of one op.
              Gather,          ///< Arg: fetch unit. Stage 3 all-gather.
              Release,         ///< Arg: fetch unit. Free gathered params.
              Reduce,          ///< Arg: bucket. Gradient reduction.
              OptimizerStep,   ///< Arg: sub-group. Update owned shard.
              GatherParams,    ///< Arg: unused. Stage 1/2 param all-gather.
              Transfer)        ///< Arg: transfer. Offload copy or NVMe I/O.
inline const char *const InstrKindNames[] = {
    "forward", "backward",      "gather",        "release",
    "reduce",  "optimizer-step", "gather-params", "transfer"};

DSC_PLAN_ENUM(MemorySpace, Device, Host)
inline const char *const MemorySpaceNames[] = {"device", "host"};

/// What a buffer holds; estimates are broken down by these.
DSC_PLAN_ENUM(Category,
              Params16,        ///< 16-bit (model dtype) parameters held.
              GatheredParams,  ///< Stage 3 parameters gathered for use.
              Grads,           ///< Model-dtype gradients.
              GradsFP32,       ///< fp32 gradients of the partition.
              MasterParams,    ///< fp32 master copy of the partition.
              OptimizerStates, ///< Adam moments and the like.
              ReduceBuckets,   ///< Gradient reduction (IPG) buckets.
              Activations,     ///< Tensors saved for backward.
              Workspace,       ///< Transient activation gradients.
              OffloadStaging)  ///< Buffers offload copies go through.
inline const char *const CategoryNames[] = {
    "params16",   "gathered_params",  "grads",         "grads_fp32",
    "master_params", "optimizer_states", "reduce_buckets", "activations",
    "workspace",  "offload_staging"};
constexpr unsigned NumCategories = 10;

DSC_PLAN_ENUM(TransferKind, HostToDevice, DeviceToHost, NVMeRead, NVMeWrite)
inline const char *const TransferKindNames[] = {"host-to-device",
                                                "device-to-host", "nvme-read",
                                                "nvme-write"};

/// When a transfer happens, relative to what it serves (Transfer::Owner
/// indexes the table named here).
DSC_PLAN_ENUM(TransferPoint,
              AfterReduce,    ///< Owner: bucket. Reduced gradients out.
              BeforeStep,     ///< Owner: sub-group. Optimizer state in.
              AfterStep,      ///< Owner: sub-group. States out, params in.
              BeforeGather,   ///< Owner: fetch unit. Host shard in.
              CheckpointOut,  ///< Owner: op starting a layer.
              CheckpointIn)   ///< Owner: op starting a layer.
inline const char *const TransferPointNames[] = {
    "after-reduce", "before-step",    "after-step",
    "before-gather", "checkpoint-out", "checkpoint-in"};

#undef DSC_PLAN_ENUM

template <typename E> struct EnumInfo;
#define DSC_PLAN_ENUM_INFO(E)                                                  \
  template <> struct EnumInfo<E> {                                             \
    static constexpr const char *const *Names = E##Names;                      \
    static constexpr unsigned Count =                                          \
        sizeof(E##Names) / sizeof(E##Names[0]);                                \
  };
DSC_PLAN_ENUM_INFO(DType)
DSC_PLAN_ENUM_INFO(OffloadDevice)
DSC_PLAN_ENUM_INFO(TensorRole)
DSC_PLAN_ENUM_INFO(Collective)
DSC_PLAN_ENUM_INFO(Stream)
DSC_PLAN_ENUM_INFO(InstrKind)
DSC_PLAN_ENUM_INFO(MemorySpace)
DSC_PLAN_ENUM_INFO(Category)
DSC_PLAN_ENUM_INFO(TransferKind)
DSC_PLAN_ENUM_INFO(TransferPoint)
#undef DSC_PLAN_ENUM_INFO

template <typename E> const char *enumName(E V) {
  unsigned I = unsigned(V);
  return I < EnumInfo<E>::Count ? EnumInfo<E>::Names[I] : "?";
}

//===----------------------------------------------------------------------===//
// The plan.
//===----------------------------------------------------------------------===//

/// A symbolic dimension of the model and the value it was planned with.
struct DimBinding {
  std::string Name;
  int64_t Value = 0;
  template <class V> void visit(V &&F) {
    F("name", Name);
    F("value", Value);
  }
};

/// Figures the time estimates use. Named so a calibration can replace them.
struct Hardware {
  std::string GpuName;
  uint64_t GpuMemoryBytes = 0;      ///< 0: not given, no fit check.
  uint64_t DenseFlopsPerSec = 0;    ///< Achievable 16-bit matmul rate.
  uint64_t MemoryBytesPerSec = 0;   ///< Achievable device memory rate.
  uint64_t CollectiveBytesPerSec = 0; ///< Bus bandwidth of large collectives.
  uint64_t CollectiveLatencyNanos = 0;
  uint64_t PinnedCopyBytesPerSec = 0;
  uint64_t PageableCopyBytesPerSec = 0;
  uint64_t NVMeReadBytesPerSec = 0;
  uint64_t NVMeWriteBytesPerSec = 0;
  uint64_t HostAdamElemsPerSec = 0; ///< CPU optimizer throughput per rank.
  /// Elements a rank converts per second on the host between 16-bit and
  /// fp32 (offloaded gradients in, updated parameters out).
  uint64_t HostConvertElemsPerSec = 0;
  template <class V> void visit(V &&F) {
    F("gpu", GpuName);
    F("gpu_memory_bytes", GpuMemoryBytes);
    F("dense_flops_per_sec", DenseFlopsPerSec);
    F("memory_bytes_per_sec", MemoryBytesPerSec);
    F("collective_bytes_per_sec", CollectiveBytesPerSec);
    F("collective_latency_ns", CollectiveLatencyNanos);
    F("pinned_copy_bytes_per_sec", PinnedCopyBytesPerSec);
    F("pageable_copy_bytes_per_sec", PageableCopyBytesPerSec);
    F("nvme_read_bytes_per_sec", NVMeReadBytesPerSec);
    F("nvme_write_bytes_per_sec", NVMeWriteBytesPerSec);
    F("host_adam_elems_per_sec", HostAdamElemsPerSec);
    F("host_convert_elems_per_sec", HostConvertElemsPerSec);
  }
};

/// The settings the plan was made with: the resolved config's values that
/// matter, the model's identity, the machine.
struct Info {
  std::string Producer;
  std::string ModelPath;
  uint64_t ModelHash = 0;  ///< FNV-1a of the model file.
  uint64_t ConfigHash = 0; ///< FNV-1a of the resolved config text.
  uint32_t WorldSize = 1;
  uint32_t Nodes = 1;
  uint32_t GpusPerNode = 1;
  uint32_t ZeroStage = 0;
  uint32_t MicroBatch = 1;
  uint32_t GradAccum = 1;
  std::vector<DimBinding> Dims;
  DType ParamDType = DType::F32;
  DType CommDType = DType::F32;
  DType GradAccumDType = DType::F32;
  DType MasterDType = DType::F32;
  DType OptimizerStateDType = DType::F32;
  std::string Optimizer;          ///< DeepSpeed's optimizer type.
  uint32_t OptimizerStates = 0;   ///< State tensors per parameter (Adam: 2).
  /// Adam-family hyperparameters as decimal text (exact in both the binary
  /// and the YAML form; the runtime parses them).
  std::string LearningRate = "0.001", Beta1 = "0.9", Beta2 = "0.999",
              Epsilon = "1e-08", WeightDecay = "0";
  bool OverlapComm = false;
  bool ContiguousGradients = true;
  uint64_t ReduceBucketElems = 0;
  uint64_t AllgatherBucketElems = 0;
  uint64_t PrefetchBucketElems = 0;
  uint64_t MaxLiveParams = 0;
  uint64_t MaxReuseDistance = 0;
  uint64_t ParamPersistenceThreshold = 0;
  uint64_t ModelPersistenceThreshold = 0;
  uint64_t SubGroupElems = 0;
  OffloadDevice OptimizerOffload = OffloadDevice::None;
  bool OptimizerOffloadPinned = true;
  OffloadDevice ParamOffload = OffloadDevice::None;
  bool ParamOffloadPinned = true;
  uint32_t AioBufferCount = 0;
  uint64_t AioBufferBytes = 0;
  bool CheckpointLayers = false;  ///< Activation checkpointing per layer.
  bool CpuCheckpointing = false;
  /// Activations whose size shape inference could not find: not in the
  /// memory plan, and said so in every report.
  uint32_t UnknownActivations = 0;
  Hardware Machine;
  template <class V> void visit(V &&F) {
    F("producer", Producer);
    F("model", ModelPath);
    F("model_hash", ModelHash);
    F("config_hash", ConfigHash);
    F("world_size", WorldSize);
    F("nodes", Nodes);
    F("gpus_per_node", GpusPerNode);
    F("zero_stage", ZeroStage);
    F("micro_batch", MicroBatch);
    F("gradient_accumulation", GradAccum);
    F("dims", Dims);
    F("param_dtype", ParamDType);
    F("comm_dtype", CommDType);
    F("grad_accum_dtype", GradAccumDType);
    F("master_dtype", MasterDType);
    F("optimizer_state_dtype", OptimizerStateDType);
    F("optimizer", Optimizer);
    F("optimizer_states", OptimizerStates);
    F("lr", LearningRate);
    F("beta1", Beta1);
    F("beta2", Beta2);
    F("eps", Epsilon);
    F("weight_decay", WeightDecay);
    F("overlap_comm", OverlapComm);
    F("contiguous_gradients", ContiguousGradients);
    F("reduce_bucket_elems", ReduceBucketElems);
    F("allgather_bucket_elems", AllgatherBucketElems);
    F("prefetch_bucket_elems", PrefetchBucketElems);
    F("max_live_params", MaxLiveParams);
    F("max_reuse_distance", MaxReuseDistance);
    F("param_persistence_threshold", ParamPersistenceThreshold);
    F("model_persistence_threshold", ModelPersistenceThreshold);
    F("sub_group_elems", SubGroupElems);
    F("offload_optimizer", OptimizerOffload);
    F("offload_optimizer_pinned", OptimizerOffloadPinned);
    F("offload_param", ParamOffload);
    F("offload_param_pinned", ParamOffloadPinned);
    F("aio_buffer_count", AioBufferCount);
    F("aio_buffer_bytes", AioBufferBytes);
    F("checkpoint_layers", CheckpointLayers);
    F("cpu_checkpointing", CpuCheckpointing);
    F("unknown_activations", UnknownActivations);
    F("hardware", Machine);
  }
};

/// A trainable or frozen parameter.
struct Tensor {
  std::string Name;
  std::vector<int64_t> Shape;
  uint64_t Elems = 0;
  uint32_t Module = NoIndex;
  TensorRole Role = TensorRole::Trainable;
  uint32_t FirstUse = NoIndex; ///< First op using it, in forward order.
  uint32_t LastUse = NoIndex;
  /// Stage 1/2: element offset in the flat buffer of trainable parameters.
  uint64_t FlatOffset = 0;
  /// Stage 3: elements each rank owns (ceil(Elems / world size)).
  uint64_t ShardElems = 0;
  /// Stage 3: kept whole on every rank (persistence thresholds).
  bool Persistent = false;
  template <class V> void visit(V &&F) {
    F("name", Name);
    F("shape", Shape);
    F("elems", Elems);
    F("module", Module);
    F("role", Role);
    F("first_use", FirstUse);
    F("last_use", LastUse);
    F("flat_offset", FlatOffset);
    F("shard_elems", ShardElems);
    F("persistent", Persistent);
  }
};

struct Module {
  std::string Name;
  std::vector<uint32_t> Tensors;
  uint64_t Elems = 0;
  template <class V> void visit(V &&F) {
    F("name", Name);
    F("tensors", Tensors);
    F("elems", Elems);
  }
};

/// One matrix product of an op, for time estimates and synthetic compute:
/// Batch x [M x K] . [K x N].
struct Gemm {
  uint64_t Batch = 1, M = 0, N = 0, K = 0;
  template <class V> void visit(V &&F) {
    F("batch", Batch);
    F("m", M);
    F("n", N);
    F("k", K);
  }
};

/// A compute op of the forward graph (shape-only ops are left out).
struct Op {
  std::string Name;
  std::string Type;
  uint32_t Module = NoIndex;     ///< Fetch scope (module of its params).
  uint32_t Layer = NoIndex;      ///< Repeated block it belongs to.
  std::vector<uint32_t> Params;  ///< Tensors it reads as weights.
  std::vector<Gemm> Gemms;       ///< Per micro batch.
  uint64_t ForwardFlops = 0;     ///< Per micro batch.
  /// Bytes of its outputs saved for backward, per micro batch, and the op
  /// whose backward releases them (the earliest op that saves them).
  uint64_t SavedBytes = 0;
  uint32_t SavedUntil = NoIndex;
  /// First op of a layer: bytes of the layer's inputs, which activation
  /// checkpointing keeps instead of the layer's saved tensors.
  uint64_t CheckpointBytes = 0;
  uint64_t TransientBytes = 0;   ///< Gradient workspace of its backward.
  template <class V> void visit(V &&F) {
    F("name", Name);
    F("type", Type);
    F("module", Module);
    F("layer", Layer);
    F("params", Params);
    F("gemms", Gemms);
    F("forward_flops", ForwardFlops);
    F("saved_bytes", SavedBytes);
    F("saved_until", SavedUntil);
    F("checkpoint_bytes", CheckpointBytes);
    F("transient_bytes", TransientBytes);
  }
};

/// A set of ranks: [First, First + Count).
struct RankRange {
  uint32_t First = 0, Count = 0;
  template <class V> void visit(V &&F) {
    F("first", First);
    F("count", Count);
  }
};

/// Ranks whose memory layout is the same: one memory plan serves them all.
struct RankClass {
  std::vector<RankRange> Ranks;
  uint64_t OwnedElems = 0;   ///< Partition elements (real + padding).
  uint64_t PaddingElems = 0; ///< Of which padding.
  /// Stage 1/2: elements of the parameters overlapping the partition (the
  /// contiguous gradient buffer DeepSpeed allocates).
  uint64_t GradPartitionElems = 0;
  /// The class merges ranks that differ; its sizes are the largest of
  /// them (plans keep at most MaxRankClasses classes).
  bool UpperBound = false;
  const std::vector<RankRange> &Ranges() const { return Ranks; }
  template <class V> void visit(V &&F) {
    F("ranks", Ranks);
    F("owned_elems", OwnedElems);
    F("padding_elems", PaddingElems);
    F("grad_partition_elems", GradPartitionElems);
    F("upper_bound", UpperBound);
  }
};

/// Stage 3 optimizer step tile: consecutive tensors of the partition.
struct SubGroup {
  uint32_t FirstTensor = 0, EndTensor = 0; ///< In Partition::Order.
  uint64_t Elems = 0;                      ///< Per rank.
  template <class V> void visit(V &&F) {
    F("first", FirstTensor);
    F("end", EndTensor);
    F("elems", Elems);
  }
};

/// How trainable parameters are laid out and split over ranks.
struct Partition {
  std::vector<uint32_t> Order; ///< Trainable tensors in flat order.
  uint64_t FlatElems = 0;      ///< Stage 1/2: sum of trainable elements.
  uint64_t PaddedElems = 0;    ///< Stage 1/2: rounded to the alignment.
  uint64_t AlignmentElems = 0;
  uint64_t PartitionElems = 0; ///< Per rank.
  std::vector<SubGroup> SubGroups;
  std::vector<RankClass> RankClasses;
  template <class V> void visit(V &&F) {
    F("order", Order);
    F("flat_elems", FlatElems);
    F("padded_elems", PaddedElems);
    F("alignment_elems", AlignmentElems);
    F("partition_elems", PartitionElems);
    F("sub_groups", SubGroups);
    F("rank_classes", RankClasses);
  }
};

/// A piece of a tensor: elements [Begin, End).
struct Segment {
  uint32_t Tensor = 0;
  uint64_t Begin = 0, End = 0;
  template <class V> void visit(V &&F) {
    F("tensor", Tensor);
    F("begin", Begin);
    F("end", End);
  }
};

/// A gradient reduction: the gradients it carries, in the order they
/// become ready in backward.
struct Bucket {
  Collective Kind = Collective::AllReduce;
  DType Type = DType::F32;
  std::vector<Segment> Segments;
  uint64_t Elems = 0;
  /// A single gradient larger than the bucket reduces from its own
  /// storage rather than through the bucket buffer (DeepSpeed's
  /// extra_large_param_to_reduce).
  bool InPlace = false;
  /// The bucket buffer it goes through (ipg.<BufferIndex>); NoIndex when
  /// it reduces in place or gradients are not contiguous.
  uint32_t BufferIndex = NoIndex;
  template <class V> void visit(V &&F) {
    F("kind", Kind);
    F("dtype", Type);
    F("segments", Segments);
    F("elems", Elems);
    F("in_place", InPlace);
    F("buffer", BufferIndex);
  }
};

/// Stage 3: the parameters gathered together before a module runs.
struct FetchUnit {
  uint32_t Module = NoIndex;
  std::vector<uint32_t> Tensors; ///< Not persistent.
  uint64_t Elems = 0;            ///< Full (gathered) elements.
  template <class V> void visit(V &&F) {
    F("module", Module);
    F("tensors", Tensors);
    F("elems", Elems);
  }
};

/// A copy between device, host and NVMe.
struct Transfer {
  TransferKind Kind = TransferKind::HostToDevice;
  Category What = Category::Params16;
  TransferPoint Point = TransferPoint::AfterReduce;
  uint32_t Owner = 0;
  uint64_t Bytes = 0; ///< Per rank (largest rank class).
  bool Pinned = true;
  uint64_t Nanos = 0; ///< At the hardware figures in Info.
  template <class V> void visit(V &&F) {
    F("kind", Kind);
    F("what", What);
    F("point", Point);
    F("owner", Owner);
    F("bytes", Bytes);
    F("pinned", Pinned);
    F("ns", Nanos);
  }
};

/// One step of a rank's program. Instructions on one stream run in
/// order; Waits names earlier instructions (on other streams) that must
/// have finished first.
struct Instruction {
  InstrKind Kind = InstrKind::Forward;
  Stream On = Stream::Compute;
  uint32_t Micro = 0;
  uint32_t Arg = NoIndex;
  std::vector<uint32_t> Waits;
  uint64_t Nanos = 0; ///< Estimated duration.
  template <class V> void visit(V &&F) {
    F("kind", Kind);
    F("stream", On);
    F("micro", Micro);
    F("arg", Arg);
    F("waits", Waits);
    F("ns", Nanos);
  }
};

/// Instructions [Begin, End) during which a buffer holds live data.
struct Interval {
  uint32_t Begin = 0, End = 0;
  template <class V> void visit(V &&F) {
    F("begin", Begin);
    F("end", End);
  }
};

/// A buffer of the static memory plan. Sizes and offsets are per rank
/// class (index into Partition::RankClasses).
struct Buffer {
  std::string Name;
  Category What = Category::Workspace;
  MemorySpace Space = MemorySpace::Device;
  bool Pinned = false; ///< Host buffers: page-locked.
  std::vector<Interval> Live;
  std::vector<uint64_t> Bytes;
  std::vector<uint64_t> Offsets;
  template <class V> void visit(V &&F) {
    F("name", Name);
    F("category", What);
    F("space", Space);
    F("pinned", Pinned);
    F("live", Live);
    F("bytes", Bytes);
    F("offsets", Offsets);
  }
};

struct CategoryBytes {
  Category What = Category::Params16;
  uint64_t Bytes = 0;
  template <class V> void visit(V &&F) {
    F("category", What);
    F("bytes", Bytes);
  }
};

/// Memory not in the arena: CUDA context, library workspaces, NCCL.
struct FixedCost {
  std::string Name;
  uint64_t Bytes = 0;
  template <class V> void visit(V &&F) {
    F("name", Name);
    F("bytes", Bytes);
  }
};

/// The estimate for one rank class.
struct RankEstimate {
  uint64_t DeviceArenaBytes = 0;  ///< Size of the device arena.
  uint64_t DeviceLiveBoundBytes = 0; ///< Max over time of live bytes.
  uint64_t DeviceFixedBytes = 0;
  uint64_t DevicePeakBytes = 0;   ///< Arena + fixed.
  uint32_t PeakInstruction = 0;   ///< Where the live bytes peak.
  std::vector<CategoryBytes> AtPeak; ///< Live bytes at that instruction.
  uint64_t HostArenaBytes = 0;
  uint64_t HostPinnedBytes = 0;
  uint64_t HostPeakBytes = 0;
  uint64_t NVMeBytes = 0;
  template <class V> void visit(V &&F) {
    F("device_arena_bytes", DeviceArenaBytes);
    F("device_live_bound_bytes", DeviceLiveBoundBytes);
    F("device_fixed_bytes", DeviceFixedBytes);
    F("device_peak_bytes", DevicePeakBytes);
    F("peak_instruction", PeakInstruction);
    F("at_peak", AtPeak);
    F("host_arena_bytes", HostArenaBytes);
    F("host_pinned_bytes", HostPinnedBytes);
    F("host_peak_bytes", HostPeakBytes);
    F("nvme_bytes", NVMeBytes);
  }
};

/// What DeepSpeed's own estimator and rules of thumb would say.
struct DeepSpeedEstimate {
  uint64_t DeviceBytes = 0; ///< Per GPU.
  uint64_t HostBytes = 0;   ///< Per node.
  std::string Basis;
  template <class V> void visit(V &&F) {
    F("device_bytes", DeviceBytes);
    F("host_bytes", HostBytes);
    F("basis", Basis);
  }
};

struct Estimate {
  std::vector<FixedCost> Fixed;
  std::vector<RankEstimate> Ranks; ///< Per rank class.
  DeepSpeedEstimate DeepSpeed;
  uint64_t StepNanos = 0;          ///< Estimated step time.
  uint64_t ExposedCommNanos = 0;
  uint64_t ExposedOffloadNanos = 0;
  template <class V> void visit(V &&F) {
    F("fixed", Fixed);
    F("ranks", Ranks);
    F("deepspeed", DeepSpeed);
    F("step_ns", StepNanos);
    F("exposed_comm_ns", ExposedCommNanos);
    F("exposed_offload_ns", ExposedOffloadNanos);
  }
};

struct Plan {
  Info Settings;
  std::string ConfigText; ///< The resolved config the plan was made from.
  std::vector<Tensor> Tensors;
  std::vector<Module> Modules;
  std::vector<Op> Ops;
  Partition Layout;
  std::vector<Bucket> Buckets;
  std::vector<FetchUnit> FetchUnits;
  std::vector<Transfer> Transfers;
  std::vector<Instruction> Program;
  std::vector<Buffer> Buffers;
  Estimate Estimates;
};

/// Section ids of plan.bin, and how Plan's members map to them. A section
/// holds one member's visit() encoding.
enum class SectionId : uint32_t {
  Info = 1,
  Config = 2,
  Tensors = 3,
  Modules = 4,
  Ops = 5,
  Partition = 6,
  Buckets = 7,
  FetchUnits = 8,
  Transfers = 9,
  Program = 10,
  Buffers = 11,
  Estimate = 12,
};

template <class V> void visitSections(Plan &P, V &&F) {
  F(SectionId::Info, "info", P.Settings);
  F(SectionId::Config, "config", P.ConfigText);
  F(SectionId::Tensors, "tensors", P.Tensors);
  F(SectionId::Modules, "modules", P.Modules);
  F(SectionId::Ops, "ops", P.Ops);
  F(SectionId::Partition, "partition", P.Layout);
  F(SectionId::Buckets, "buckets", P.Buckets);
  F(SectionId::FetchUnits, "fetch_units", P.FetchUnits);
  F(SectionId::Transfers, "transfers", P.Transfers);
  F(SectionId::Program, "program", P.Program);
  F(SectionId::Buffers, "buffers", P.Buffers);
  F(SectionId::Estimate, "estimate", P.Estimates);
}

//===----------------------------------------------------------------------===//
// Binary encoding.
//===----------------------------------------------------------------------===//

inline uint64_t fnv1a(const uint8_t *Data, size_t Size,
                      uint64_t Hash = 14695981039346656037ull) {
  for (size_t I = 0; I < Size; ++I)
    Hash = (Hash ^ Data[I]) * 1099511628211ull;
  return Hash;
}

namespace detail {

/// Stands for any field visitor when detecting visit().
struct AnyField {
  template <typename T> void operator()(const char *, T &) const;
};
template <typename T, typename = void> struct HasVisit : std::false_type {};
template <typename T>
struct HasVisit<T, std::void_t<decltype(std::declval<T &>().visit(
                       std::declval<AnyField>()))>> : std::true_type {};

/// The fewest bytes an encoded T takes: a count in a damaged file larger
/// than the bytes left divided by this is refused before allocating.
template <typename T> size_t minEncodedBytes() {
  if constexpr (std::is_same_v<T, bool> || std::is_enum_v<T>)
    return 1;
  else if constexpr (std::is_integral_v<T>)
    return sizeof(T);
  else if constexpr (HasVisit<T>::value) {
    static const size_t Bytes = [] {
      T V;
      size_t Sum = 0;
      V.visit([&](const char *, auto &Field) {
        Sum += minEncodedBytes<std::decay_t<decltype(Field)>>();
      });
      return Sum;
    }();
    return Bytes;
  } else {
    return 4; // A string or a list: its count.
  }
}

class Writer {
public:
  std::vector<uint8_t> Out;

  void raw(const void *P, size_t N) {
    const uint8_t *B = static_cast<const uint8_t *>(P);
    Out.insert(Out.end(), B, B + N);
  }
  template <typename I> void integer(I V) {
    uint8_t B[sizeof(I)];
    for (size_t K = 0; K < sizeof(I); ++K)
      B[K] = uint8_t(uint64_t(V) >> (8 * K));
    raw(B, sizeof(I));
  }
  template <typename T> void value(const T &V) {
    if constexpr (std::is_same_v<T, bool>)
      integer(uint8_t(V));
    else if constexpr (std::is_enum_v<T>)
      integer(uint8_t(V));
    else if constexpr (std::is_integral_v<T>)
      integer(V);
    else if constexpr (std::is_same_v<T, std::string>) {
      integer(uint32_t(V.size()));
      raw(V.data(), V.size());
    } else if constexpr (HasVisit<T>::value) {
      const_cast<T &>(V).visit(
          [&](const char *, const auto &Field) { this->value(Field); });
    } else {
      integer(uint32_t(V.size()));
      for (const auto &E : V)
        value(E);
    }
  }
};

class Reader {
public:
  Reader(const uint8_t *Data, size_t Size) : P(Data), End(Data + Size) {}
  bool Failed = false;

  bool atEnd() const { return P == End; }
  template <typename I> I integer() {
    if (size_t(End - P) < sizeof(I)) {
      Failed = true;
      P = End;
      return I();
    }
    uint64_t V = 0;
    for (size_t K = 0; K < sizeof(I); ++K)
      V |= uint64_t(P[K]) << (8 * K);
    P += sizeof(I);
    return I(V);
  }
  template <typename T> void value(T &V) {
    if (Failed)
      return;
    if constexpr (std::is_same_v<T, bool>) {
      uint8_t B = integer<uint8_t>();
      Failed |= B > 1;
      V = B;
    } else if constexpr (std::is_enum_v<T>) {
      uint8_t B = integer<uint8_t>();
      Failed |= B >= EnumInfo<T>::Count;
      V = T(B);
    } else if constexpr (std::is_integral_v<T>) {
      V = integer<T>();
    } else if constexpr (std::is_same_v<T, std::string>) {
      uint32_t N = integer<uint32_t>();
      if (N > size_t(End - P)) {
        Failed = true;
        return;
      }
      V.assign(reinterpret_cast<const char *>(P), N);
      P += N;
    } else if constexpr (HasVisit<T>::value) {
      V.visit([&](const char *, auto &Field) { this->value(Field); });
    } else {
      uint32_t N = integer<uint32_t>();
      // A count beyond what the bytes left can hold is damage, refused
      // before allocating for it.
      using E = typename T::value_type;
      if (N > size_t(End - P) / std::max<size_t>(1, minEncodedBytes<E>())) {
        Failed = true;
        return;
      }
      V.clear();
      V.resize(N);
      for (auto &E : V)
        value(E);
    }
  }

private:
  const uint8_t *P;
  const uint8_t *End;
};

constexpr size_t HeaderBytes = 32;
constexpr size_t SectionEntryBytes = 24;

} // namespace detail

/// Encodes a plan as plan.bin bytes.
inline std::vector<uint8_t> writePlan(const Plan &Source) {
  Plan &P = const_cast<Plan &>(Source); // visit() is shared with the reader.
  std::vector<std::pair<SectionId, std::vector<uint8_t>>> Sections;
  visitSections(P, [&](SectionId Id, const char *, auto &Member) {
    detail::Writer W;
    W.value(Member);
    Sections.emplace_back(Id, std::move(W.Out));
  });
  detail::Writer Table;
  uint64_t Offset =
      detail::HeaderBytes + detail::SectionEntryBytes * Sections.size();
  for (auto &[Id, Bytes] : Sections) {
    Table.integer(uint32_t(Id));
    Table.integer(uint32_t(0));
    Table.integer(Offset);
    Table.integer(uint64_t(Bytes.size()));
    Offset += Bytes.size();
  }
  std::vector<uint8_t> Body = std::move(Table.Out);
  for (auto &S : Sections)
    Body.insert(Body.end(), S.second.begin(), S.second.end());
  detail::Writer Header;
  Header.raw(FileMagic, sizeof(FileMagic));
  Header.integer(FormatVersion);
  Header.integer(uint32_t(Sections.size()));
  Header.integer(uint64_t(detail::HeaderBytes + Body.size()));
  Header.integer(fnv1a(Body.data(), Body.size()));
  std::vector<uint8_t> File = std::move(Header.Out);
  File.insert(File.end(), Body.begin(), Body.end());
  return File;
}

/// Decodes plan.bin bytes. On failure returns nullopt and sets Error to
/// what is wrong and what to do.
inline std::optional<Plan> readPlan(const uint8_t *Data, size_t Size,
                                    std::string &Error) {
  if (Size < detail::HeaderBytes ||
      std::memcmp(Data, FileMagic, sizeof(FileMagic)) != 0) {
    Error = "not a dsc plan (no DSCPLAN header); make one with dsc plan";
    return std::nullopt;
  }
  detail::Reader H(Data + 8, detail::HeaderBytes - 8);
  uint32_t Version = H.integer<uint32_t>();
  uint32_t Count = H.integer<uint32_t>();
  uint64_t FileSize = H.integer<uint64_t>();
  uint64_t Checksum = H.integer<uint64_t>();
  if (Version != FormatVersion) {
    Error = "plan format version " + std::to_string(Version) +
            ", this build reads version " + std::to_string(FormatVersion) +
            "; make the plan again with this dsc";
    return std::nullopt;
  }
  if (FileSize != Size) {
    Error = "the file is " + std::to_string(Size) + " bytes but its header "
            "says " + std::to_string(FileSize) + ": truncated or appended to";
    return std::nullopt;
  }
  if (fnv1a(Data + detail::HeaderBytes, Size - detail::HeaderBytes) !=
      Checksum) {
    Error = "checksum mismatch: the file is damaged; make the plan again";
    return std::nullopt;
  }
  if (Count > (Size - detail::HeaderBytes) / detail::SectionEntryBytes) {
    Error = "the section table is larger than the file";
    return std::nullopt;
  }
  Plan P;
  detail::Reader Table(Data + detail::HeaderBytes,
                       Count * detail::SectionEntryBytes);
  std::vector<bool> Seen(16, false);
  for (uint32_t I = 0; I < Count; ++I) {
    uint32_t Id = Table.integer<uint32_t>();
    Table.integer<uint32_t>();
    uint64_t Offset = Table.integer<uint64_t>();
    uint64_t Bytes = Table.integer<uint64_t>();
    if (Offset < detail::HeaderBytes || Offset > Size ||
        Bytes > Size - Offset) {
      Error = "section " + std::to_string(Id) + " lies outside the file";
      return std::nullopt;
    }
    bool Known = false;
    visitSections(P, [&](SectionId S, const char *Name, auto &Member) {
      if (uint32_t(S) != Id || !Error.empty())
        return;
      Known = true;
      if (Seen[Id]) {
        Error = std::string("section '") + Name + "' appears twice";
        return;
      }
      Seen[Id] = true;
      detail::Reader R(Data + Offset, Bytes);
      R.value(Member);
      if (R.Failed || !R.atEnd())
        Error = std::string("section '") + Name +
                "' is malformed; make the plan again";
    });
    if (!Error.empty())
      return std::nullopt;
    (void)Known; // Unknown sections come from newer writers: skipped.
  }
  for (uint32_t Id = 1; Id <= uint32_t(SectionId::Estimate); ++Id)
    if (!Seen[Id]) {
      Error = "section " + std::to_string(Id) + " is missing";
      return std::nullopt;
    }
  return P;
}

/// Checks that every index in the plan points where it should, so that a
/// reader can follow them without bounds checks. Returns "" when the plan
/// is consistent, else what is wrong.
/// NVMe swap I/O (ZeRO-Infinity) runs with O_DIRECT: file offsets, sizes
/// and host addresses in multiples of this.
constexpr uint64_t SwapAlignment = 4096;

/// Bytes a stage-3 fetch unit takes in an NVMe parameter buffer and in the
/// swap file: each tensor's shard starts on an aligned offset.
inline uint64_t swapUnitBytes(const Plan &P, uint32_t Unit) {
  uint64_t Bytes = 0, PB = dtypeBytes(P.Settings.ParamDType);
  for (uint32_t T : P.FetchUnits[Unit].Tensors)
    Bytes += (P.Tensors[T].ShardElems * PB + SwapAlignment - 1) /
             SwapAlignment * SwapAlignment;
  return Bytes;
}

/// Stage 3: how a fetch unit is gathered. A unit of several tensors is
/// all-gathered with one NCCL call into its rank-major "gather.U" buffer
/// (rank r's chunk holds its shards of every tensor, in unit order) and
/// then unpacked into "unit.U", tensor by tensor, as DeepSpeed's coalesced
/// all-gather does; a unit of one tensor, or any unit on one rank, is
/// already in tensor order when gathered and goes into unit.U directly.
inline bool unitGathersRankMajor(const Plan &P, uint32_t Unit) {
  return P.FetchUnits[Unit].Tensors.size() > 1 && P.Settings.WorldSize > 1;
}

/// What an instruction's time counts as when a step is split, in the
/// planner's estimate and in dsrun's measurement alike: a collective is
/// communication and a transfer or host work offload, whatever stream it
/// runs on (without overlap_comm, reductions run on the compute stream).
inline bool isCommunication(const Instruction &In) {
  return In.Kind == InstrKind::Reduce || In.Kind == InstrKind::Gather ||
         In.Kind == InstrKind::GatherParams;
}

inline bool isOffload(const Instruction &In) {
  return In.Kind == InstrKind::Transfer || In.On == Stream::Host;
}

inline std::string checkPlan(const Plan &P) {
  auto Bad = [](const std::string &What, size_t I) {
    return What + " " + std::to_string(I) + " is out of range";
  };
  const Info &S = P.Settings;
  size_t NT = P.Tensors.size(), NM = P.Modules.size(), NO = P.Ops.size(),
         NI = P.Program.size(), NC = P.Layout.RankClasses.size(),
         NB = P.Buckets.size(), NU = P.FetchUnits.size(),
         NG = P.Layout.SubGroups.size(), NX = P.Transfers.size();
  if (S.WorldSize == 0 || S.ZeroStage > 3 || S.MicroBatch == 0 ||
      S.GradAccum == 0 || uint64_t(S.Nodes) * S.GpusPerNode != S.WorldSize)
    return "settings: world size 0, ZeRO stage above 3, micro batch or "
           "accumulation 0, or nodes x GPUs per node is not the world size";
  const uint64_t W = S.WorldSize;

  for (size_t I = 0; I < NT; ++I) {
    const Tensor &T = P.Tensors[I];
    if (T.Module != NoIndex && T.Module >= NM)
      return Bad("module of tensor", I);
    if ((T.FirstUse != NoIndex && T.FirstUse >= NO) ||
        (T.LastUse != NoIndex && T.LastUse >= NO))
      return Bad("the first or last use of tensor", I);
    uint64_t Product = 1;
    for (int64_t D : T.Shape) {
      if (D < 0 || (D && Product > UINT64_MAX / uint64_t(D)))
        return Bad("a dimension of tensor", I);
      Product *= uint64_t(D);
    }
    if (Product != T.Elems)
      return "tensor " + std::to_string(I) + ": its shape does not have " +
             std::to_string(T.Elems) + " elements";
    if (S.ZeroStage == 3 && T.ShardElems != (T.Elems + W - 1) / W)
      return "tensor " + std::to_string(I) + ": its shard is not its "
             "elements divided over the ranks";
  }
  for (size_t I = 0; I < NM; ++I)
    for (uint32_t T : P.Modules[I].Tensors)
      if (T >= NT)
        return Bad("a tensor of module", I);
  for (size_t I = 0; I < NO; ++I) {
    if (P.Ops[I].Module != NoIndex && P.Ops[I].Module >= NM)
      return Bad("module of op", I);
    if (P.Ops[I].SavedUntil != NoIndex &&
        (P.Ops[I].SavedUntil < I || P.Ops[I].SavedUntil >= NO))
      return Bad("the release point of the saved outputs of op", I);
    for (uint32_t T : P.Ops[I].Params)
      if (T >= NT)
        return Bad("a parameter of op", I);
  }

  const Partition &L = P.Layout;
  std::vector<bool> InOrder(NT, false);
  for (uint32_t T : L.Order) {
    if (T >= NT || InOrder[T] || P.Tensors[T].Role != TensorRole::Trainable)
      return "the partition order names a missing, repeated or frozen "
             "tensor";
    InOrder[T] = true;
    if (S.ZeroStage == 1 || S.ZeroStage == 2) {
      const Tensor &X = P.Tensors[T];
      if (X.FlatOffset > L.FlatElems || X.Elems > L.FlatElems - X.FlatOffset)
        return Bad("the flat range of tensor", T);
    }
  }
  if (S.ZeroStage > 0 && (L.PartitionElems > UINT64_MAX / W ||
                          L.PartitionElems * W != L.PaddedElems ||
                          L.PaddedElems < L.FlatElems))
    return "partition: the padded size is not the partition times the "
           "world size, or is below the flat size";
  for (const SubGroup &G : L.SubGroups)
    if (G.FirstTensor > G.EndTensor || G.EndTensor > L.Order.size())
      return "a sub-group lies outside the partition order";
  if (NC == 0)
    return "no rank classes";
  std::vector<RankRange> Ranges;
  for (const RankClass &C : L.RankClasses)
    for (const RankRange &R : C.Ranges())
      Ranges.push_back(R);
  std::sort(Ranges.begin(), Ranges.end(),
            [](const RankRange &A, const RankRange &B) {
              return A.First < B.First;
            });
  uint64_t Next = 0;
  for (const RankRange &R : Ranges) {
    if (R.Count == 0 || R.First != Next)
      return "rank classes do not cover every rank exactly once";
    Next = uint64_t(R.First) + R.Count;
  }
  if (Next != W)
    return "rank classes do not cover every rank exactly once";

  for (size_t I = 0; I < NB; ++I) {
    if (P.Buckets[I].BufferIndex != NoIndex && P.Buckets[I].BufferIndex > 1)
      return Bad("the buffer of bucket", I);
  }
  for (size_t I = 0; I < NB; ++I)
    for (const Segment &Seg : P.Buckets[I].Segments)
      if (Seg.Tensor >= NT || Seg.Begin > Seg.End ||
          Seg.End > P.Tensors[Seg.Tensor].Elems)
        return Bad("a segment of bucket", I);
  for (size_t I = 0; I < NU; ++I) {
    if (P.FetchUnits[I].Module >= NM)
      return Bad("module of fetch unit", I);
    for (uint32_t T : P.FetchUnits[I].Tensors)
      if (T >= NT)
        return Bad("a tensor of fetch unit", I);
  }
  for (size_t I = 0; I < NX; ++I) {
    const Transfer &X = P.Transfers[I];
    size_t Limit = 0;
    switch (X.Point) {
    case TransferPoint::AfterReduce:
      Limit = NB;
      break;
    case TransferPoint::BeforeStep:
    case TransferPoint::AfterStep:
      Limit = NG;
      break;
    case TransferPoint::BeforeGather:
      Limit = NU;
      break;
    case TransferPoint::CheckpointOut:
    case TransferPoint::CheckpointIn:
      Limit = NO;
      break;
    }
    if (X.Owner >= Limit)
      return Bad("the owner of transfer", I);
  }

  std::vector<bool> Gathered(NU, false);
  for (size_t I = 0; I < NI; ++I) {
    const Instruction &In = P.Program[I];
    size_t Limit = 0;
    bool StreamOK = false;
    switch (In.Kind) {
    case InstrKind::Forward:
    case InstrKind::Backward:
      Limit = NO;
      StreamOK = In.On == Stream::Compute;
      break;
    case InstrKind::Gather:
    case InstrKind::Release:
      Limit = NU;
      StreamOK = In.On == (In.Kind == InstrKind::Gather ? Stream::Comm
                                                        : Stream::Compute);
      break;
    case InstrKind::Reduce:
      Limit = NB;
      StreamOK = In.On == Stream::Comm || In.On == Stream::Compute;
      break;
    case InstrKind::OptimizerStep:
      Limit = NG;
      StreamOK = In.On == Stream::Compute || In.On == Stream::Host;
      break;
    case InstrKind::Transfer:
      Limit = NX;
      if (In.Arg < NX) {
        TransferKind K = P.Transfers[In.Arg].Kind;
        StreamOK = In.On == (K == TransferKind::HostToDevice   ? Stream::CopyIn
                             : K == TransferKind::DeviceToHost ? Stream::CopyOut
                                                               : Stream::Host);
      }
      break;
    case InstrKind::GatherParams:
      Limit = NoIndex;
      StreamOK = In.On == Stream::Comm;
      break;
    }
    if (In.Kind != InstrKind::GatherParams && In.Arg >= Limit)
      return Bad("the argument of instruction", I);
    if (!StreamOK)
      return "instruction " + std::to_string(I) + " runs on a stream its "
             "kind cannot use";
    for (uint32_t Wt : In.Waits)
      if (Wt >= I)
        return Bad("a wait of instruction", I);
    if (In.Micro >= S.GradAccum)
      return Bad("the micro step of instruction", I);
    if (In.Kind == InstrKind::Gather || In.Kind == InstrKind::Release) {
      bool Gather = In.Kind == InstrKind::Gather;
      if (Gathered[In.Arg] == Gather)
        return "instruction " + std::to_string(I) +
               (Gather ? " gathers a unit already gathered"
                       : " releases a unit that is not gathered");
      Gathered[In.Arg] = Gather;
    }
  }
  for (bool G : Gathered)
    if (G)
      return "a fetch unit is still gathered at the end of the step";

  if (P.Estimates.Ranks.size() != NC)
    return "the estimate does not have one entry per rank class";
  for (size_t I = 0; I < P.Buffers.size(); ++I) {
    const Buffer &B = P.Buffers[I];
    if (B.Bytes.size() != NC || B.Offsets.size() != NC)
      return Bad("sizes or offsets (one per rank class) of buffer", I);
    uint32_t After = 0;
    for (const Interval &Lv : B.Live) {
      if (Lv.Begin >= Lv.End || Lv.End > NI || Lv.Begin < After)
        return Bad("a lifetime (ordered, disjoint, inside the program) of "
                   "buffer",
                   I);
      After = Lv.End;
    }
    for (size_t C = 0; C < NC; ++C) {
      const RankEstimate &R = P.Estimates.Ranks[C];
      uint64_t Arena = B.Space == MemorySpace::Device ? R.DeviceArenaBytes
                                                      : R.HostArenaBytes;
      if (!B.Live.empty() &&
          (B.Offsets[C] > Arena || B.Bytes[C] > Arena - B.Offsets[C]))
        return "buffer " + std::to_string(I) + " lies outside its arena";
    }
  }
  for (const RankEstimate &R : P.Estimates.Ranks)
    if (NI && R.PeakInstruction >= NI)
      return "the peak instruction is out of range";
  return "";
}

} // namespace dsc::plan

#endif
