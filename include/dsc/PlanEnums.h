//===- PlanEnums.h - The plan's enumerations ---------------------*- C++ -*-===//
//
// Every enumeration of the plan, each one list of (value, name) pairs from
// which the enum, its names (YAML, dsc show) and its range (the decoder's
// check) are generated. Dependency-free, like PlanFormat.h.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PLANENUMS_H
#define DSC_PLANENUMS_H

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

namespace dsc::plan {

constexpr uint32_t NoIndex = std::numeric_limits<uint32_t>::max();

//===----------------------------------------------------------------------===//
// Enumerations: one list each, of (value, name) pairs; X(Value, "name").
//===----------------------------------------------------------------------===//

/// Element types. Parameters, gradients and optimizer states are one of
/// the three floating-point ones; the compute program also holds token ids
/// and targets (int32), index values (int64) and masks (uint8); ZeRO++
/// qwZ's gathers move int8 weights.
#define DSC_PLAN_DTYPE(X)                                                      \
  X(F32, "fp32") X(F16, "fp16") X(BF16, "bf16") X(I32, "int32")                \
  X(I64, "int64") X(U8, "uint8") X(I8, "int8")
#define DSC_PLAN_OFFLOADDEVICE(X) X(None, "none") X(CPU, "cpu") X(NVMe, "nvme")
/// NCCL's CTA policy for dsrun's communicators (ncclConfig_t::CTAPolicy,
/// in NCCL's order): Zero runs all-gathers on the copy engines, leaving
/// every SM to compute.
#define DSC_PLAN_COMMCTAPOLICY(X)                                              \
  X(Default, "default") X(Efficiency, "efficiency") X(Zero, "zero")
#define DSC_PLAN_TENSORROLE(X) X(Trainable, "trainable") X(Frozen, "frozen")
#define DSC_PLAN_COLLECTIVE(X)                                                 \
  X(AllReduce, "all-reduce") X(ReduceScatter, "reduce-scatter")                \
  X(AllGather, "all-gather")
/// Where an instruction runs. Compute and Comm are CUDA streams; the copy
/// streams carry offload transfers; Host is CPU work (the offloaded
/// optimizer step, NVMe I/O).
#define DSC_PLAN_STREAM(X)                                                     \
  X(Compute, "compute") X(Comm, "comm") X(CopyIn, "copy-in")                   \
  X(CopyOut, "copy-out") X(Host, "host")
/// What an instruction does; its Arg indexes the table named here:
/// Forward, Backward: op; Gather, GatherSecondary, Release: fetch unit
/// (stage 3); Reduce: bucket; OptimizerStep: sub-group; GatherParams:
/// unused (stage 1/2 param all-gather); Transfer: transfer (offload copy or
/// NVMe I/O). A Gather all-gathers a unit over every rank and, with ZeRO++
/// hpZ, keeps the rank's secondary partition of it; a GatherSecondary
/// all-gathers the unit within the rank's hpZ group from those partitions.
/// With MiCS a Reduce reduce-scatters within the rank's shard group and,
/// in the last micro step, a ReduceReplicas (Arg: bucket) all-reduces the
/// bucket's share of the gradient partition across the groups. With ZeRO++
/// qgZ across nodes, a Reduce of a bucket with quantized gradients ends
/// with their 4-bit all-to-all within the node and the sums requantized;
/// a ReduceAcrossNodes (Arg: bucket) after it, on the same stream, sends
/// those between nodes and leaves the rank its partitions.
#define DSC_PLAN_INSTRKIND(X)                                                  \
  X(Forward, "forward") X(Backward, "backward") X(Gather, "gather")            \
  X(Release, "release") X(Reduce, "reduce")                                    \
  X(OptimizerStep, "optimizer-step") X(GatherParams, "gather-params")          \
  X(Transfer, "transfer") X(ClipGradients, "clip-gradients")                   \
  X(GatherSecondary, "gather-secondary") X(ReduceReplicas, "reduce-replicas")  \
  X(ReduceAcrossNodes, "reduce-across-nodes")
#define DSC_PLAN_MEMORYSPACE(X) X(Device, "device") X(Host, "host")
/// What a buffer holds; estimates are broken down by these. Params16: the
/// model-dtype parameters held; GatheredParams: stage-3 parameters
/// gathered for use; Grads: model-dtype gradients; GradsFP32: the
/// partition's gradients the step reads, in the master dtype (fp32, or
/// bf16 with bf16 master weights); MasterParams, OptimizerStates: the
/// partition's master copy and Adam moments; ReduceBuckets: gradient
/// reduction buckets; Activations: forward values backward reads;
/// Workspace: values of one instruction, activation gradients, library
/// workspaces; OffloadStaging: buffers offload copies go through;
/// Inputs: token ids and targets; Constants: the program's constants.
#define DSC_PLAN_CATEGORY(X)                                                   \
  X(Params16, "params16") X(GatheredParams, "gathered_params")                 \
  X(Grads, "grads") X(GradsFP32, "grads_fp32")                                 \
  X(MasterParams, "master_params") X(OptimizerStates, "optimizer_states")      \
  X(ReduceBuckets, "reduce_buckets") X(Activations, "activations")             \
  X(Workspace, "workspace") X(OffloadStaging, "offload_staging")               \
  X(Inputs, "inputs") X(Constants, "constants")
/// What a buffer of the memory plan is for. The runtime finds the
/// buffers it needs through views (Placement) and, for whole buffers of
/// state, by role; never by name. Indexed roles (Buffer::Index): ipg the
/// bucket buffer, gather, unit, hpz_secondary and qwz_gather the fetch unit,
/// grads_fp32 at stage 3 the sub-group, value the compute value.
#define DSC_PLAN_BUFFERROLE(X)                                                 \
  X(Params16, "params16") X(PersistentParams, "persistent_params")             \
  X(MasterParams, "master_params") X(OptimizerStates, "optimizer_states")      \
  X(Grads16, "grads16") X(GradPartition16, "grads16_partition")                \
  X(GradPartition, "grads_partition") X(GradsFP32, "grads_fp32")               \
  X(GradsFP32Accumulation, "grads_fp32_accumulation")                          \
  X(ReduceFlat, "reduce_flat") X(ReduceBucket, "ipg")                          \
  X(UnitGather, "gather") X(Unit, "unit") X(Value, "value")                    \
  X(Scratch, "scratch") X(HostScratch, "host_scratch")                         \
  X(InputStaging, "input_staging") X(KernelWorkspace, "kernel_workspace")      \
  X(GradStaging, "offload_grad_staging")                                       \
  X(GradStagingHost, "offload_grad_staging_host")                              \
  X(ParamStagingHost, "offload_param_staging_host")                            \
  X(NVMeOptimizerBuffers, "nvme_optimizer_buffers")                            \
  X(NVMeParamBuffers, "nvme_param_buffers") X(SaveStaging, "save_staging")     \
  X(HpzSecondary, "hpz_secondary") X(QwzGather, "qwz_gather")                  \
  X(QgzReduce, "qgz_reduce")
/// A host conversion is no copy: offloaded gradients that reached a pinned
/// staging slot are converted (and accumulated) into their host partition.
#define DSC_PLAN_TRANSFERKIND(X)                                               \
  X(HostToDevice, "host-to-device") X(DeviceToHost, "device-to-host")          \
  X(NVMeRead, "nvme-read") X(NVMeWrite, "nvme-write")                          \
  X(HostConvert, "host-convert")
/// When a transfer happens, relative to what it serves (Transfer::Owner
/// indexes the table named here): AfterReduce: bucket (reduced gradients
/// out); BeforeStep: sub-group (optimizer state in); AfterStep: sub-group
/// (states out, params in); BeforeGather: fetch unit (host shard in).
#define DSC_PLAN_TRANSFERPOINT(X)                                              \
  X(AfterReduce, "after-reduce") X(BeforeStep, "before-step")                  \
  X(AfterStep, "after-step") X(BeforeGather, "before-gather")
/// What a value of the compute program is: a model input or target,
/// filled every micro step; a parameter or its gradient, where the ZeRO
/// layout keeps them; a constant of the program; an activation or an
/// activation gradient; the loss.
#define DSC_PLAN_VALUEKIND(X)                                                  \
  X(Input, "input") X(Target, "target") X(Param, "param")                      \
  X(ParamGrad, "param-grad") X(Constant, "constant")                           \
  X(Activation, "activation") X(Gradient, "gradient") X(Loss, "loss")
/// The kernels dsrun implements; each kind's attributes are a struct of
/// include/dsc/KernelAttrs.h, and everything else about it one entry of
/// the kernel registry (include/dsc/KernelRegistry.h).
#define DSC_PLAN_KERNELKIND(X)                                                 \
  X(Gemm, "gemm") X(Pointwise, "pointwise") X(Reduce, "reduce")                \
  X(Softmax, "softmax") X(SoftmaxGrad, "softmax-grad")                         \
  X(LayerNorm, "layer-norm") X(LayerNormGrad, "layer-norm-grad")               \
  X(RMSNorm, "rms-norm") X(RMSNormGrad, "rms-norm-grad")                       \
  X(Attention, "attention") X(AttentionGrad, "attention-grad")                 \
  X(Gather, "gather") X(GatherGrad, "gather-grad")                             \
  X(CrossEntropy, "cross-entropy") X(CrossEntropyGrad, "cross-entropy-grad")   \
  X(Fill, "fill") X(Rotary, "rotary") X(RotaryGrad, "rotary-grad")          \
  X(SwiGLU, "swiglu") X(SwiGLUGrad, "swiglu-grad")
/// What the training step minimizes: the next token's cross entropy, the
/// masked tokens', or the sequence's class's.
#define DSC_PLAN_LOSSKIND(X)                                                   \
  X(CausalLM, "causal-lm") X(MaskedLM, "masked-lm")                            \
  X(SequenceClassification, "sequence-classification")
/// What a product's epilogue does beside it (GemmAttrs).
#define DSC_PLAN_GEMMEPILOGUE(X)                                               \
  X(None, "none") X(Bias, "bias") X(BiasGeluTanh, "bias-gelu-tanh")            \
  X(DGeluTanh, "dgelu-tanh") X(BiasGradA, "bias-grad-a")                       \
  X(BiasGradB, "bias-grad-b")
/// How attention is computed (include/dsc/AttentionAlgorithms.h).
#define DSC_PLAN_ATTENTIONALGORITHM(X)                                         \
  X(Math, "math") X(Flash, "flash") X(Cudnn, "cudnn")
/// Instructions of a pointwise kernel's program (PointwiseAttrs).
#define DSC_PLAN_POINTWISEOP(X)                                                \
  X(Const, "const") X(Add, "add") X(Sub, "sub") X(Mul, "mul") X(Div, "div")   \
  X(Pow, "pow") X(Max, "max") X(Min, "min") X(Neg, "neg") X(Abs, "abs")        \
  X(Sign, "sign") X(Sqrt, "sqrt") X(Reciprocal, "reciprocal") X(Exp, "exp")   \
  X(Log, "log") X(Tanh, "tanh") X(Erf, "erf") X(Sigmoid, "sigmoid")            \
  X(Relu, "relu") X(Cos, "cos") X(Sin, "sin") X(Floor, "floor")                \
  X(Ceil, "ceil") X(GeluErf, "gelu-erf") X(GeluTanh, "gelu-tanh")              \
  X(GeluErfGrad, "gelu-erf-grad") X(GeluTanhGrad, "gelu-tanh-grad")            \
  X(Where, "where") X(Equal, "equal") X(Less, "less")                          \
  X(LessOrEqual, "less-or-equal") X(Greater, "greater")                        \
  X(GreaterOrEqual, "greater-or-equal") X(Not, "not") X(And, "and")            \
  X(Or, "or") X(Xor, "xor") X(IsNaN, "is-nan") X(IsInf, "is-inf")              \
  X(Dropout, "dropout") X(Mod, "mod") X(Trunc, "trunc")

#define DSC_PLAN_ENUM_VALUE(V, N) V,
#define DSC_PLAN_ENUM_NAME(V, N) N,
#define DSC_PLAN_ENUM(Name, LIST)                                              \
  enum class Name : uint8_t { LIST(DSC_PLAN_ENUM_VALUE) };                     \
  inline const char *const Name##Names[] = {LIST(DSC_PLAN_ENUM_NAME)};
DSC_PLAN_ENUM(DType, DSC_PLAN_DTYPE)
DSC_PLAN_ENUM(OffloadDevice, DSC_PLAN_OFFLOADDEVICE)
DSC_PLAN_ENUM(CommCtaPolicy, DSC_PLAN_COMMCTAPOLICY)
DSC_PLAN_ENUM(TensorRole, DSC_PLAN_TENSORROLE)
DSC_PLAN_ENUM(Collective, DSC_PLAN_COLLECTIVE)
DSC_PLAN_ENUM(Stream, DSC_PLAN_STREAM)
DSC_PLAN_ENUM(InstrKind, DSC_PLAN_INSTRKIND)
DSC_PLAN_ENUM(MemorySpace, DSC_PLAN_MEMORYSPACE)
DSC_PLAN_ENUM(Category, DSC_PLAN_CATEGORY)
DSC_PLAN_ENUM(BufferRole, DSC_PLAN_BUFFERROLE)
DSC_PLAN_ENUM(TransferKind, DSC_PLAN_TRANSFERKIND)
DSC_PLAN_ENUM(TransferPoint, DSC_PLAN_TRANSFERPOINT)
DSC_PLAN_ENUM(ValueKind, DSC_PLAN_VALUEKIND)
DSC_PLAN_ENUM(KernelKind, DSC_PLAN_KERNELKIND)
DSC_PLAN_ENUM(PointwiseOp, DSC_PLAN_POINTWISEOP)
DSC_PLAN_ENUM(LossKind, DSC_PLAN_LOSSKIND)
DSC_PLAN_ENUM(GemmEpilogue, DSC_PLAN_GEMMEPILOGUE)
DSC_PLAN_ENUM(AttentionAlgorithm, DSC_PLAN_ATTENTIONALGORITHM)
#undef DSC_PLAN_ENUM
#undef DSC_PLAN_ENUM_VALUE
#undef DSC_PLAN_ENUM_NAME

template <typename E> struct EnumInfo;
#define DSC_PLAN_ENUM_INFO(E)                                                  \
  template <> struct EnumInfo<E> {                                             \
    static constexpr const char *const *Names = E##Names;                      \
    static constexpr unsigned Count =                                          \
        sizeof(E##Names) / sizeof(E##Names[0]);                                \
  };
DSC_PLAN_ENUM_INFO(DType)
DSC_PLAN_ENUM_INFO(OffloadDevice)
DSC_PLAN_ENUM_INFO(CommCtaPolicy)
DSC_PLAN_ENUM_INFO(TensorRole)
DSC_PLAN_ENUM_INFO(Collective)
DSC_PLAN_ENUM_INFO(Stream)
DSC_PLAN_ENUM_INFO(InstrKind)
DSC_PLAN_ENUM_INFO(MemorySpace)
DSC_PLAN_ENUM_INFO(Category)
DSC_PLAN_ENUM_INFO(BufferRole)
DSC_PLAN_ENUM_INFO(TransferKind)
DSC_PLAN_ENUM_INFO(TransferPoint)
DSC_PLAN_ENUM_INFO(ValueKind)
DSC_PLAN_ENUM_INFO(KernelKind)
DSC_PLAN_ENUM_INFO(PointwiseOp)
DSC_PLAN_ENUM_INFO(LossKind)
DSC_PLAN_ENUM_INFO(GemmEpilogue)
DSC_PLAN_ENUM_INFO(AttentionAlgorithm)
#undef DSC_PLAN_ENUM_INFO

template <typename E> const char *enumName(E V) {
  unsigned I = unsigned(V);
  return I < EnumInfo<E>::Count ? EnumInfo<E>::Names[I] : "?";
}
/// The value named Name (enumName's inverse), or nullopt.
template <typename E> std::optional<E> enumNamed(std::string_view Name) {
  for (unsigned I = 0; I < EnumInfo<E>::Count; ++I)
    if (Name == EnumInfo<E>::Names[I])
      return E(I);
  return std::nullopt;
}
/// How a buffer of a role is shown: the role's name, with the index where
/// the role has several (ipg.0, unit.3). A value's buffer takes the
/// value's name instead.
inline std::string bufferName(BufferRole R, uint32_t Index) {
  std::string Name = enumName(R);
  return Index == NoIndex ? Name : Name + "." + std::to_string(Index);
}

/// Counts used as array bounds (the runtime's streams, the estimate's
/// categories).
constexpr unsigned NumStreams = EnumInfo<Stream>::Count;
constexpr unsigned NumCategories = EnumInfo<Category>::Count;
constexpr unsigned NumKernelKinds = EnumInfo<KernelKind>::Count;

inline unsigned dtypeBytes(DType T) {
  switch (T) {
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I64:
    return 8;
  case DType::U8:
  case DType::I8:
    return 1;
  default:
    return 4;
  }
}
inline bool isFloatType(DType T) {
  return T == DType::F32 || T == DType::F16 || T == DType::BF16;
}

} // namespace dsc::plan

#endif
