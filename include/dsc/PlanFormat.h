//===- PlanFormat.h - The plan: its IR --------------------------*- C++ -*-===//
//
// A plan says, for one (config, model, world size), what every rank holds,
// when every byte moves, where every buffer lives and which kernels compute
// the step. dsc writes it; dsrun executes it. The three headers the two
// share depend on nothing but the C++17 standard library, so the runtime
// builds where there is no LLVM, RapidJSON or ONNX:
//
//   PlanFormat.h   the IR: enumerations and structs (this file)
//   PlanCodec.h    plan.bin, written and read (lib/PlanFormat/PlanCodec.cpp)
//   PlanCheck.h    checkPlan, the verifier (lib/PlanFormat/PlanCheck.cpp)
//
// Each struct lists its fields once, in `visit`, with the names the YAML
// form uses; the binary writer, the binary reader and the YAML mapping
// (lib/Plan/PlanYAML.cpp) all walk that list, so they cannot disagree.
// Each enumeration is one list of (value, name) pairs.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PLANFORMAT_H
#define DSC_PLANFORMAT_H

#include "dsc/KernelAttrs.h"
#include "dsc/PlanEnums.h"

#include <cstdint>
#include <string>
#include <vector>

namespace dsc::plan {

constexpr char FileMagic[8] = {'D', 'S', 'C', 'P', 'L', 'A', 'N', '\0'};
/// Bumped whenever an existing section's encoding or meaning changes; new
/// sections do not need a bump (old readers skip them).
constexpr uint32_t FormatVersion = 22;
/// Ranks of different layouts beyond this many are merged (see RankClass).
constexpr uint32_t MaxRankClasses = 8;


/// The runtime's scratch buffer on the device, in floats: the step's
/// values (step number, learning rate, bias corrections, clip factor, loss
/// scale: runtime/src/Kernels.h StepValues), two per instruction (the
/// collectives' timings the ranks agree on), the losses of a step's micro
/// steps, the global gradient norm, and the partial sums of squares the
/// norm's kernels leave, one per block. The host scratch buffer holds the
/// step's values as the host writes them, then the losses read back.
struct ScratchLayout {
  static constexpr uint64_t NormBlocks = 512;
  static constexpr uint64_t StepValueFloats = 16;
  uint64_t StepValues = 0, Timings = 0, Losses = 0, Norm = 0, Partials = 0,
           Floats = 0;
  uint64_t HostLosses = 0, HostFloats = 0;
};
inline ScratchLayout scratchLayout(uint64_t Instructions, uint32_t GradAccum) {
  ScratchLayout L;
  L.Timings = ScratchLayout::StepValueFloats;
  L.Losses = L.Timings + 2 * Instructions;
  L.Norm = L.Losses + GradAccum;
  L.Partials = L.Norm + 1;
  L.Floats = L.Partials + ScratchLayout::NormBlocks;
  L.HostLosses = ScratchLayout::StepValueFloats;
  L.HostFloats = L.HostLosses + GradAccum + 1;
  return L;
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

/// What one kind of compute kernel achieved where dsrun measured it
/// (--calibration-out): a rate on the dimension that bounds the kind
/// (FLOPs for products and attention, bytes for the rest); the other is
/// 0, unused. Kind is a KernelKind name; Backward tells the backward's
/// kernels of that kind from the forward's.
struct KernelRate {
  std::string Kind;
  bool Backward = false;
  uint64_t FlopsPerSec = 0;
  uint64_t BytesPerSec = 0;
  template <class V> void visit(V &&F) {
    F("kind", Kind);
    F("backward", Backward);
    F("flops_per_sec", FlopsPerSec);
    F("bytes_per_sec", BytesPerSec);
  }
};

/// The bus bandwidth one kind of collective reached where dsrun measured
/// it, per call's bytes times nccl-tests' bus factor, after the call
/// latency; Kind is a Collective name (stage 2's reduces to several roots
/// count as the reduce-scatter they amount to).
struct CollectiveRate {
  std::string Kind;
  uint64_t BusBytesPerSec = 0;
  template <class V> void visit(V &&F) {
    F("kind", Kind);
    F("bus_bytes_per_sec", BusBytesPerSec);
  }
};

/// The cuBLASLt algorithm dsrun runs one product with, where dsrun
/// --calibration-out timed one faster than the first its heuristic offers:
/// the product is every gemm kernel with these attributes (sameProduct)
/// and operands of this type, Candidate its place in the heuristic's
/// order. The order is cuBLASLt's for one GPU and library version; where
/// it offers fewer, dsrun runs the first and says so. Chosen once and
/// carried by the plan, so that a plan's runs repeat bit for bit.
struct GemmAlgorithm {
  static constexpr uint32_t MaxCandidate = 63;
  GemmAttrs Product;
  DType Type = DType::BF16;
  uint32_t Candidate = 0;
  template <class V> void visit(V &&F) {
    F("product", Product);
    F("type", Type);
    F("candidate", Candidate);
  }
  /// Why this is no product's algorithm, or "" (a calibration file and
  /// checkPlan hold entries to the same rule).
  std::string misfit() const {
    if (Candidate > MaxCandidate)
      return "gemm algorithm candidate " + std::to_string(Candidate) +
             " is beyond cuBLASLt's heuristic (at most " +
             std::to_string(MaxCandidate) + ")";
    if (Type != DType::F32 && Type != DType::F16 && Type != DType::BF16)
      return "a gemm algorithm's type is not a floating-point type";
    return "";
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
  /// Bus bandwidth of a collective whose ranks span nodes, set by the
  /// link between them (0: one node), and per collective kind where dsrun
  /// measured it (--calibration-out of a run over several nodes).
  /// InterNodeLink says what the link is and where the figure comes from.
  uint64_t InterNodeBytesPerSec = 0;
  std::vector<CollectiveRate> InterNodeRates;
  std::string InterNodeLink;
  uint64_t PinnedCopyBytesPerSec = 0;
  uint64_t PageableCopyBytesPerSec = 0;
  uint64_t NVMeReadBytesPerSec = 0;
  uint64_t NVMeWriteBytesPerSec = 0;
  /// The host's passes over offloaded state per rank: each takes the
  /// longer of its bytes at HostBytesPerSec, the rank's share of the
  /// host's memory bandwidth, and its elements at its own rate on the
  /// rank's threads: HostAdamElemsPerSec for the CPU optimizer,
  /// HostConvertElemsPerSec for conversions between 16-bit and fp32
  /// (offloaded gradients in, updated parameters out).
  uint64_t HostBytesPerSec = 0;
  uint64_t HostAdamElemsPerSec = 0;
  uint64_t HostConvertElemsPerSec = 0;
  /// Measured per kernel kind; a kind without an entry is estimated from
  /// DenseFlopsPerSec and MemoryBytesPerSec.
  std::vector<KernelRate> KernelRates;
  /// The compute stream's time between two kernels, measured.
  uint64_t KernelGapNanos = 0;
  /// Measured per collective kind; a kind without an entry runs at
  /// CollectiveBytesPerSec.
  std::vector<CollectiveRate> CollectiveRates;
  /// Products whose fastest algorithm is not cuBLASLt's first.
  std::vector<GemmAlgorithm> GemmAlgorithms;
  template <class V> void visit(V &&F) {
    F("gpu", GpuName);
    F("gpu_memory_bytes", GpuMemoryBytes);
    F("dense_flops_per_sec", DenseFlopsPerSec);
    F("memory_bytes_per_sec", MemoryBytesPerSec);
    F("collective_bytes_per_sec", CollectiveBytesPerSec);
    F("collective_latency_ns", CollectiveLatencyNanos);
    F("inter_node_bytes_per_sec", InterNodeBytesPerSec);
    F("inter_node_rates", InterNodeRates);
    F("inter_node_link", InterNodeLink);
    F("pinned_copy_bytes_per_sec", PinnedCopyBytesPerSec);
    F("pageable_copy_bytes_per_sec", PageableCopyBytesPerSec);
    F("nvme_read_bytes_per_sec", NVMeReadBytesPerSec);
    F("nvme_write_bytes_per_sec", NVMeWriteBytesPerSec);
    F("host_bytes_per_sec", HostBytesPerSec);
    F("host_adam_elems_per_sec", HostAdamElemsPerSec);
    F("host_convert_elems_per_sec", HostConvertElemsPerSec);
    F("kernel_rates", KernelRates);
    F("kernel_gap_ns", KernelGapNanos);
    F("collective_rates", CollectiveRates);
    F("gemm_algorithms", GemmAlgorithms);
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
  /// Adam's weight decay decoupled from the gradient (AdamW, DeepSpeed's
  /// adam_w_mode), or added to it (L2 regularisation).
  bool DecoupledWeightDecay = true;
  /// Adam divides its moments by 1 - beta^step (bias_correction).
  bool BiasCorrection = true;
  /// Gradients are averaged across ranks (gradient_allreduce_op "mean"),
  /// or summed ("sum").
  bool AverageGradients = true;
  /// The learning-rate scheduler DeepSpeed builds ("" for none) and its
  /// parameters as "name=value" (dsc/LrSchedule.h).
  std::string Scheduler;
  std::vector<std::string> SchedulerParams;
  /// The global gradient norm is clipped to this; "0" turns it off.
  std::string GradientClipping = "0";
  /// fp16 loss scaling, as the config gives it to DeepSpeed's loss scaler
  /// (runtime/src/LossScaler.h): LossScale "0" is dynamic, starting at
  /// 2^InitialScalePower; anything else a static scale. Unused unless the
  /// parameters are fp16.
  std::string LossScale = "0";
  uint32_t InitialScalePower = 16;
  uint32_t LossScaleWindow = 1000;
  uint32_t Hysteresis = 2;
  bool ConsecutiveHysteresis = false;
  uint32_t MinLossScale = 1;
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
  /// ZeRO++ hpZ: ranks per group (consecutive ranks) that keep a secondary
  /// partition of the gathered parameters; 1 is off.
  uint32_t HpzPartition = 1;
  /// ZeRO++ qwZ: stage-3 gathers move int8 weights and fp32 scales (see
  /// plan::unitGathersQuantized).
  bool QuantizedWeights = false;
  /// ZeRO++ qgZ was asked for. DeepSpeed quantizes the reduction only
  /// when the world spans nodes (plan::qgzAcrossNodes); on one node it
  /// changes nothing.
  bool QuantizedGradients = false;
  /// MiCS: ranks per shard group (consecutive ranks), which parameters,
  /// gradients and optimizer state are partitioned over; the groups hold
  /// replicas (plan::partitionRanks). 0 is off.
  uint32_t MicsShard = 0;
  OffloadDevice OptimizerOffload = OffloadDevice::None;
  bool OptimizerOffloadPinned = true;
  OffloadDevice ParamOffload = OffloadDevice::None;
  bool ParamOffloadPinned = true;
  uint32_t AioBufferCount = 0;
  uint64_t AioBufferBytes = 0;
  /// Each layer's forward runs again before its backward (HF gradient
  /// checkpointing); only the layers' inputs are kept.
  bool CheckpointLayers = false;
  /// NCCL's CTA policy dsrun runs with (dsc plan --comm-cta-policy): with
  /// Zero the all-gathers run on the copy engines, at their own rate and
  /// without slowing the compute beside them (plan::gathersOnCopyEngines).
  CommCtaPolicy CtaPolicy = CommCtaPolicy::Default;
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
    F("decoupled_weight_decay", DecoupledWeightDecay);
    F("bias_correction", BiasCorrection);
    F("average_gradients", AverageGradients);
    F("scheduler", Scheduler);
    F("scheduler_params", SchedulerParams);
    F("gradient_clipping", GradientClipping);
    F("loss_scale", LossScale);
    F("initial_scale_power", InitialScalePower);
    F("loss_scale_window", LossScaleWindow);
    F("hysteresis", Hysteresis);
    F("consecutive_hysteresis", ConsecutiveHysteresis);
    F("min_loss_scale", MinLossScale);
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
    F("hpz_partition_size", HpzPartition);
    F("quantized_weights", QuantizedWeights);
    F("quantized_gradients", QuantizedGradients);
    F("mics_shard_size", MicsShard);
    F("offload_optimizer", OptimizerOffload);
    F("offload_optimizer_pinned", OptimizerOffloadPinned);
    F("offload_param", ParamOffload);
    F("offload_param_pinned", ParamOffloadPinned);
    F("aio_buffer_count", AioBufferCount);
    F("aio_buffer_bytes", AioBufferBytes);
    F("checkpoint_layers", CheckpointLayers);
    F("comm_cta_policy", CtaPolicy);
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
  /// Stage 3: elements each rank owns (ceil(Elems / plan::partitionRanks)).
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

/// Instructions [Begin, End) during which a buffer holds live data; for
/// an op, the kernels [Begin, End) of its forward or backward.
struct Interval {
  uint32_t Begin = 0, End = 0;
  template <class V> void visit(V &&F) {
    F("begin", Begin);
    F("end", End);
  }
};

/// A compute op of the forward program: one forward kernel (with the views
/// it reads through), and the backward kernels that differentiate it. The
/// schedule orders ops; stage 3 gathers the parameters an op reads before
/// it; a layer's ops are checkpointed together.
struct Op {
  std::string Name;
  std::string Type;              ///< The forward kernel's operator.
  uint32_t Module = NoIndex;     ///< Fetch scope (module of its params).
  uint32_t Layer = NoIndex;      ///< Repeated block it belongs to.
  std::vector<uint32_t> Params;  ///< Tensors it reads as weights.
  Interval Forward, Backward;    ///< Its kernels.
  template <class V> void visit(V &&F) {
    F("name", Name);
    F("type", Type);
    F("module", Module);
    F("layer", Layer);
    F("params", Params);
    F("forward", Forward);
    F("backward", Backward);
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

/// A copy between device, host and NVMe. Offloaded gradients after a
/// reduction come in two forms: a copy straight into the host partition,
/// where they keep their type and the micro step starts the partition's
/// gradients; and, Staged, a copy into a pinned staging slot plus the host
/// conversion that converts the slot into the partition (adding to it in
/// the later micro steps of stage 2 and 3).
struct Transfer {
  TransferKind Kind = TransferKind::HostToDevice;
  Category What = Category::Params16;
  TransferPoint Point = TransferPoint::AfterReduce;
  uint32_t Owner = 0;
  uint64_t Bytes = 0; ///< Per rank (largest rank class).
  bool Pinned = true;
  uint64_t Nanos = 0; ///< At the hardware figures in Info.
  bool Staged = false;
  template <class V> void visit(V &&F) {
    F("kind", Kind);
    F("what", What);
    F("point", Point);
    F("owner", Owner);
    F("bytes", Bytes);
    F("pinned", Pinned);
    F("ns", Nanos);
    F("staged", Staged);
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

/// A buffer of the static memory plan. Sizes and offsets are per rank
/// class (index into Partition::RankClasses). Name is for people
/// (bufferName); the runtime goes by Role and Index.
struct Buffer {
  std::string Name;
  BufferRole Role = BufferRole::Value;
  uint32_t Index = NoIndex;
  Category What = Category::Workspace;
  MemorySpace Space = MemorySpace::Device;
  bool Pinned = false; ///< Host buffers: page-locked.
  std::vector<Interval> Live;
  std::vector<uint64_t> Bytes;
  std::vector<uint64_t> Offsets;
  template <class V> void visit(V &&F) {
    F("name", Name);
    F("role", Role);
    F("index", Index);
    F("category", What);
    F("space", Space);
    F("pinned", Pinned);
    F("live", Live);
    F("bytes", Bytes);
    F("offsets", Offsets);
  }
};

/// Elements of one type at a place in a buffer: Elems elements of Type
/// from byte Offset of buffer Buffer on rank 0, and from Offset + r *
/// RankStride on rank r (a rank's chunk of a gather or a reduction, its
/// partition of the flat parameters). Offsets are the same in every rank
/// class; checkPlan proves every rank's view lies inside its buffer.
struct View {
  uint32_t Buffer = NoIndex;
  uint64_t Offset = 0;
  uint64_t RankStride = 0;
  uint64_t Elems = 0;
  DType Type = DType::F32;
  template <class V> void visit(V &&F) {
    F("buffer", Buffer);
    F("offset", Offset);
    F("rank_stride", RankStride);
    F("elems", Elems);
    F("dtype", Type);
  }
};

/// Where a parameter tensor's data lives and moves (view ids; NoIndex
/// where the stage or the settings give it none).
struct TensorViews {
  /// The whole tensor where the compute program reads it: its slot of
  /// params16 (stage 0-2), of its gathered unit, or its padded copy in
  /// persistent_params (stage 3).
  uint32_t Param = NoIndex;
  /// Where its gradient goes for the reduction: its slot of grads16
  /// (stage 0/1, accumulated), of its bucket's buffer (stage 2), or of
  /// every rank's chunk of the bucket (stage 3: RankStride is a chunk;
  /// the gradient's own value when it is reduced alone).
  uint32_t Grad = NoIndex;
  /// Stage 3: this rank's shard of the 16-bit weights: in params16 (on
  /// the device, or the host with offload_param cpu), or its piece of
  /// persistent_params (RankStride is a shard).
  uint32_t Shard = NoIndex;
  /// Stage 3, in a fetch unit: its shard in every rank's chunk of what
  /// the unit is all-gathered into (RankStride is a chunk).
  uint32_t Chunk = NoIndex;
  /// Stage 3: where its shard starts among the partition's elements.
  uint64_t PartitionOffset = 0;
  template <class V> void visit(V &&F) {
    F("param", Param);
    F("grad", Grad);
    F("shard", Shard);
    F("chunk", Chunk);
    F("partition_offset", PartitionOffset);
  }
};

/// A stage-3 fetch unit: its tensors whole in unit order (Whole), what
/// the all-gather receives (Target: Whole itself, or the rank-major
/// gather buffer a unit of several tensors is unpacked from) and what
/// each rank sends (Send: its shards, side by side in params16, or its
/// chunk of Target where they were copied in from the host). With ZeRO++
/// hpZ, Secondary holds the rank's share of Target within its group: the
/// hpZ group's rank g keeps Target's g-th of hpz_partition_size equal
/// slices, which is what it sends to a GatherSecondary. With ZeRO++ qwZ
/// (plan::unitGathersQuantized), a rank quantizes Send into its chunk of
/// Quantized (QuantizedSend, int8) and of Scales (ScalesSend, fp32: one
/// per plan::qwzGroups of the chunk), both are all-gathered in place, and
/// Target is what they dequantize to. With hpZ too, a GatherSecondary
/// quantizes Secondary into QuantizedSecondarySend and
/// ScalesSecondarySend, and the group's members gather them into
/// Quantized and ScalesSecondary (plan::qwzLayout).
struct UnitViews {
  uint32_t Whole = NoIndex, Target = NoIndex, Send = NoIndex;
  uint32_t Secondary = NoIndex;
  uint32_t Quantized = NoIndex, QuantizedSend = NoIndex;
  uint32_t Scales = NoIndex, ScalesSend = NoIndex;
  uint32_t QuantizedSecondarySend = NoIndex, ScalesSecondary = NoIndex,
           ScalesSecondarySend = NoIndex;
  template <class V> void visit(V &&F) {
    F("whole", Whole);
    F("target", Target);
    F("send", Send);
    F("secondary", Secondary);
    F("quantized", Quantized);
    F("quantized_send", QuantizedSend);
    F("scales", Scales);
    F("scales_send", ScalesSend);
    F("quantized_secondary_send", QuantizedSecondarySend);
    F("scales_secondary", ScalesSecondary);
    F("scales_secondary_send", ScalesSecondarySend);
  }
};

/// The part of a stage 1/2 bucket that partition Root owns, and where it
/// goes among that partition's elements.
struct BucketPiece {
  uint32_t Root = 0;
  uint32_t View = NoIndex;
  uint64_t PartitionOffset = 0;
  template <class V> void visit(V &&F) {
    F("root", Root);
    F("view", View);
    F("partition_offset", PartitionOffset);
  }
};

/// A gradient reduction's data: all of it (Source), at stage 3 this
/// rank's chunk of it (Chunk, RankStride a chunk), and at stage 1/2 the
/// piece each partition owns (in partition order). With ZeRO++ qgZ across
/// nodes a stage-3 bucket holds its gradients whole instead, each padded
/// to the ranks (DeepSpeed reduces each alone), and has no Chunk.
struct BucketViews {
  uint32_t Source = NoIndex, Chunk = NoIndex;
  std::vector<BucketPiece> Pieces;
  /// ZeRO++ qgZ across nodes: the workspace its quantized reduction runs
  /// through (plan::qgzLayout), where the bucket has quantized gradients.
  uint32_t Qgz = NoIndex;
  template <class V> void visit(V &&F) {
    F("source", Source);
    F("chunk", Chunk);
    F("pieces", Pieces);
    F("qgz", Qgz);
  }
};

/// An optimizer sub-group: its first element among the partition's, and
/// at stage 3 the fp32 gradients it is stepped from.
struct SubGroupViews {
  uint64_t Begin = 0;
  uint32_t GradsFP32 = NoIndex;
  template <class V> void visit(V &&F) {
    F("begin", Begin);
    F("grads_fp32", GradsFP32);
  }
};

/// What a rank owns, each view indexed by the partition's elements: its
/// fp32 master weights and Adam moments, its fp32 gradients for the step
/// (stage 0-2), its reduced gradients as the reduction leaves them
/// (stage 2: grads16_partition; stage 3: grads_partition; stage 0/1: its
/// partition of grads16, RankStride the partition), and its partition of
/// the flat 16-bit parameters (stage 0-2, RankStride the partition).
struct PartitionViews {
  uint32_t Master = NoIndex, Moment1 = NoIndex, Moment2 = NoIndex,
           GradsFP32 = NoIndex, Grads = NoIndex, Params16 = NoIndex;
  template <class V> void visit(V &&F) {
    F("master", Master);
    F("moment1", Moment1);
    F("moment2", Moment2);
    F("grads_fp32", GradsFP32);
    F("grads", Grads);
    F("params16", Params16);
  }
};

/// The runtime's own places: its scratch on the device and the host
/// (ScratchLayout), the step's token ids and targets on their way in, the
/// kernels' workspace, the pinned host staging of offloaded gradients (its
/// slots, taken in turn) and parameters, the device buffer a stage-3 tensor is gathered into to
/// be saved (between steps), the NVMe swap buffers of a sub-group's
/// optimizer state (master, first and second moment) and the NVMe
/// parameter buffers.
struct RuntimeViews {
  uint32_t Scratch = NoIndex, HostScratch = NoIndex, Inputs = NoIndex,
           KernelWorkspace = NoIndex, ParamStaging = NoIndex,
           SaveStaging = NoIndex;
  std::vector<uint32_t> GradStaging, NVMeState, NVMeParams;
  template <class V> void visit(V &&F) {
    F("scratch", Scratch);
    F("host_scratch", HostScratch);
    F("inputs", Inputs);
    F("kernel_workspace", KernelWorkspace);
    F("grad_staging", GradStaging);
    F("param_staging", ParamStaging);
    F("save_staging", SaveStaging);
    F("nvme_state", NVMeState);
    F("nvme_params", NVMeParams);
  }
};

/// Where everything the runtime touches sits, as views: per tensor, fetch
/// unit, bucket, sub-group and compute value, what a rank owns, the
/// runtime's own buffers, and per instruction the buffer slot an NVMe
/// parameter read and its copy to the device go through, or an offloaded
/// gradient's copy to the host and its conversion there.
struct Placement {
  std::vector<TensorViews> Tensors;
  std::vector<UnitViews> Units;
  std::vector<BucketViews> Buckets;
  std::vector<SubGroupViews> SubGroups;
  std::vector<uint32_t> Values;
  std::vector<uint32_t> InstructionSlots;
  PartitionViews Owned;
  RuntimeViews Runtime;
  template <class V> void visit(V &&F) {
    F("tensors", Tensors);
    F("units", Units);
    F("buckets", Buckets);
    F("sub_groups", SubGroups);
    F("values", Values);
    F("instruction_slots", InstructionSlots);
    F("owned", Owned);
    F("runtime", Runtime);
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
  /// Where the figure comes from: "measured ..." (dsrun on this GPU kind,
  /// shipped with dsc), "calibrated" (--calibration), "modelled ..." or
  /// "assumed".
  std::string Basis;
  template <class V> void visit(V &&F) {
    F("name", Name);
    F("bytes", Bytes);
    F("basis", Basis);
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

//===----------------------------------------------------------------------===//
// The compute program: values, kernels and constants.
//===----------------------------------------------------------------------===//

/// A value of the compute program with storage of its own: where it lives
/// and how large it is. Parameters and their gradients live where the
/// ZeRO layout puts tensor Tensor; inputs, targets, activations,
/// gradients and the loss in memory-plan buffer Buffer; constants in
/// buffer Buffer, filled at start-up from constant Constant.
struct Value {
  std::string Name;
  ValueKind Kind = ValueKind::Activation;
  DType Type = DType::F32;
  uint64_t Elems = 0;
  uint32_t Tensor = NoIndex;
  uint32_t Buffer = NoIndex;
  uint32_t Constant = NoIndex;
  template <class V> void visit(V &&F) {
    F("name", Name);
    F("kind", Kind);
    F("dtype", Type);
    F("elems", Elems);
    F("tensor", Tensor);
    F("buffer", Buffer);
    F("constant", Constant);
  }
};

/// A kernel operand: a strided view of a value's storage. Offset and
/// strides count elements of the value's type; a stride of 0 broadcasts.
struct TensorRef {
  uint32_t Value = NoIndex;
  uint64_t Offset = 0;
  std::vector<int64_t> Shape, Strides;
  template <class V> void visit(V &&F) {
    F("value", Value);
    F("offset", Offset);
    F("shape", Shape);
    F("strides", Strides);
  }
};

/// The distance between rows of a view laid out as rows (row-major, each
/// row dense, rows evenly spaced at least a row apart: the padded rows the
/// planner gives wide odd-width values), or 0 when it is not.
inline int64_t rowStride(const std::vector<int64_t> &Shape,
                         const std::vector<int64_t> &Strides) {
  size_t R = Shape.size();
  if (R == 0 || Strides.size() != R)
    return 0;
  int64_t Cols = Shape[R - 1];
  if (Cols != 1 && Strides[R - 1] != 1)
    return 0;
  if (R == 1)
    return Cols;
  int64_t Ld = Shape[R - 2] == 1 ? Cols : Strides[R - 2];
  if (Ld < Cols)
    return 0;
  int64_t Want = Ld * Shape[R - 2];
  for (size_t K = R - 2; K-- > 0;) {
    if (Shape[K] != 1 && Strides[K] != Want)
      return 0;
    Want *= Shape[K];
  }
  return Ld;
}

/// One kernel launch: its operands, and the attributes of its kind
/// (include/dsc/KernelAttrs.h), whose alternative is the kind.
struct Kernel {
  std::string Name;           ///< What it computes, for reports.
  uint32_t Op = NoIndex;      ///< The op whose forward or backward it is.
  bool Backward = false;
  std::vector<TensorRef> Inputs, Outputs;
  KernelAttrs Attrs;
  uint64_t Flops = 0;         ///< Per launch.
  uint64_t Bytes = 0;         ///< Memory traffic per launch.
  uint64_t WorkspaceBytes = 0;
  /// What the planner expects one launch to run for, alone (no collective
  /// beside it) and without the gap before it: dsrun --profile-step sets
  /// it beside the time between the launch's events.
  uint64_t PlannedNanos = 0;

  KernelKind kind() const { return KernelKind(Attrs.index()); }
  /// The attributes of kind KK; the kernel must be of that kind.
  template <KernelKind KK> AttrsOf<KK> &attrs() {
    return std::get<size_t(KK)>(Attrs);
  }
  template <KernelKind KK> const AttrsOf<KK> &attrs() const {
    return std::get<size_t(KK)>(Attrs);
  }
  /// The attributes as T where the kind's are T or derive from it (a
  /// forward kind's base read by its backward); null otherwise.
  template <class T> const T *as() const { return attrsAs<T>(Attrs); }
  template <class T> T *as() { return attrsAs<T>(Attrs); }

  template <class V> void visit(V &&F) {
    F("name", Name);
    F("op", Op);
    F("backward", Backward);
    F("inputs", Inputs);
    F("outputs", Outputs);
    F("attrs", Attrs);
    F("flops", Flops);
    F("bytes", Bytes);
    F("workspace_bytes", WorkspaceBytes);
    F("planned_ns", PlannedNanos);
  }
};

/// A kernel kind as reports name it: "gemm", "gemm (backward)" (dsc
/// plan's kernels by kind, dsrun --profile-step, plan checks).
inline std::string kindLabel(const std::string &Kind, bool Backward) {
  return Backward ? Kind + " (backward)" : Kind;
}
inline std::string kindLabel(const Kernel &K) {
  return kindLabel(enumName(K.kind()), K.Backward);
}

/// The elements of a constant value, little-endian in its type.
struct Constant {
  uint32_t Value = NoIndex;
  std::vector<uint8_t> Bytes;
  template <class V> void visit(V &&F) {
    F("value", Value);
    F("bytes", Bytes);
  }
};

/// The training program as a whole: what the loss is, which values the
/// runtime fills, and what keeps the plan from training, if anything.
struct Compute {
  LossKind Loss = LossKind::CausalLM;
  int64_t IgnoreIndex = -100;
  std::vector<uint32_t> Inputs, Targets;
  uint32_t LossValue = NoIndex;
  /// Why this plan cannot train (a constant whose data the model file
  /// does not carry); empty when it can.
  std::vector<std::string> Missing;
  template <class V> void visit(V &&F) {
    F("loss", Loss);
    F("ignore_index", IgnoreIndex);
    F("inputs", Inputs);
    F("targets", Targets);
    F("loss_value", LossValue);
    F("missing", Missing);
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
  std::vector<Value> Values;
  std::vector<Kernel> Kernels;
  std::vector<Constant> Constants;
  Compute Training;
  std::vector<View> Views;
  Placement Places;
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
  Values = 13,
  Kernels = 14,
  Constants = 15,
  Compute = 16,
  Views = 17,
  Placement = 18,
};
constexpr uint32_t LastSection = uint32_t(SectionId::Placement);

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
  F(SectionId::Values, "values", P.Values);
  F(SectionId::Kernels, "kernels", P.Kernels);
  F(SectionId::Constants, "constants", P.Constants);
  F(SectionId::Compute, "compute", P.Training);
  F(SectionId::Views, "views", P.Views);
  F(SectionId::Placement, "placement", P.Places);
}

} // namespace dsc::plan

#endif
