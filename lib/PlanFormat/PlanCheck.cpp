//===- PlanCheck.cpp - The plan's verifier --------------------------------===//

#include "dsc/PlanCheck.h"

#include "dsc/KernelRegistry.h"
#include "dsc/PlanFacts.h"

#include <algorithm>
#include <cstdlib>

namespace dsc::plan {

namespace {

std::string bad(const std::string &What, size_t I) {
  return What + " " + std::to_string(I) + " is out of range";
}

std::string checkCompute(const Plan &P) {
  size_t NV = P.Values.size(), NK = P.Kernels.size(), NO = P.Ops.size(),
         NT = P.Tensors.size(), NBuf = P.Buffers.size(),
         NCst = P.Constants.size(), NC = P.Layout.RankClasses.size();
  for (size_t I = 0; I < NV; ++I) {
    const Value &V = P.Values[I];
    bool InTensor = V.Kind == ValueKind::Param || V.Kind == ValueKind::ParamGrad;
    if (InTensor) {
      if (V.Tensor >= NT || P.Tensors[V.Tensor].Elems != V.Elems)
        return "value " + std::to_string(I) + " names no tensor of its size";
      continue;
    }
    if (V.Kind == ValueKind::Constant && V.Constant != NoIndex &&
        (V.Constant >= NCst || P.Constants[V.Constant].Value != I))
      return bad("the data of constant value", I);
    if (V.Elems > (uint64_t(1) << 56))
      return "value " + std::to_string(I) + " is too large";
    if (!NBuf)
      continue; // Before the memory plan.
    if (V.Buffer >= NBuf)
      return bad("the buffer of value", I);
    const Buffer &B = P.Buffers[V.Buffer];
    for (size_t C = 0; C < NC && C < B.Bytes.size(); ++C)
      if (B.Bytes[C] < V.Elems * dtypeBytes(V.Type))
        return "value " + std::to_string(I) + " does not fit its buffer";
  }
  for (size_t I = 0; I < NCst; ++I) {
    const Constant &C = P.Constants[I];
    if (C.Value >= NV || P.Values[C.Value].Kind != ValueKind::Constant ||
        C.Bytes.size() != P.Values[C.Value].Elems *
                              dtypeBytes(P.Values[C.Value].Type))
      return "constant " + std::to_string(I) +
             " does not match its value's size";
  }
  // Each value is written first by kernel FirstWrite - 1; 0 for what the
  // runtime fills before any kernel runs (inputs, targets, parameters,
  // constants); NK + 1 for never.
  std::vector<size_t> FirstWrite(NV, NK + 1);
  for (size_t I = 0; I < NV; ++I) {
    ValueKind K = P.Values[I].Kind;
    if (K == ValueKind::Input || K == ValueKind::Target ||
        K == ValueKind::Param || K == ValueKind::Constant)
      FirstWrite[I] = 0;
  }
  for (size_t I = 0; I < NK; ++I) {
    const Kernel &K = P.Kernels[I];
    if (K.Op >= NO)
      return bad("the op of kernel", I);
    // Each operand names a value, has a stride a dim and a size whose
    // element count fits; then the kind holds its operands to its
    // attributes.
    for (const std::vector<TensorRef> *Side : {&K.Inputs, &K.Outputs})
      for (const TensorRef &R : *Side) {
        if (R.Value >= NV)
          return "kernel " + std::to_string(I) +
                 " has an operand outside the values";
        if (R.Shape.size() != R.Strides.size() || R.Shape.size() > 8)
          return "kernel " + std::to_string(I) +
                 " has an operand without one stride for each of its at "
                 "most 8 dims";
        uint64_t Elems = 1;
        for (size_t D = 0; D < R.Shape.size(); ++D) {
          if (R.Shape[D] < 0 || R.Shape[D] > (int64_t(1) << 40) ||
              R.Strides[D] > (int64_t(1) << 50) ||
              R.Strides[D] < -(int64_t(1) << 50))
            return "kernel " + std::to_string(I) + " has a bad operand shape";
          uint64_t Dim = uint64_t(R.Shape[D]);
          Elems = Dim && Elems > (uint64_t(1) << 56) / Dim
                      ? (uint64_t(1) << 56) + 1
                      : Elems * Dim;
        }
        if (Elems > (uint64_t(1) << 56))
          return "kernel " + std::to_string(I) + " has a bad operand shape";
      }
    if (std::string E = kernelKindInfo(K.kind()).Check(K, P.Values);
        !E.empty())
      return "kernel " + std::to_string(I) + " (" + enumName(K.kind()) +
             ") " + E;
    for (int Out = 0; Out < 2; ++Out)
      for (const TensorRef &R : Out ? K.Outputs : K.Inputs) {
        const Value &V = P.Values[R.Value];
        // The elements the view reaches must lie inside the value.
        int64_t Low = int64_t(R.Offset), High = int64_t(R.Offset);
        bool Empty = false;
        for (size_t D = 0; D < R.Shape.size(); ++D) {
          Empty |= R.Shape[D] == 0;
          int64_t Reach = (R.Shape[D] - 1) * R.Strides[D];
          (Reach < 0 ? Low : High) += Reach;
        }
        if (!Empty && (Low < 0 || uint64_t(High) >= V.Elems))
          return "kernel " + std::to_string(I) + " reaches outside value " +
                 std::to_string(R.Value);
        if (Out) {
          if (V.Kind == ValueKind::Input || V.Kind == ValueKind::Target ||
              V.Kind == ValueKind::Param || V.Kind == ValueKind::Constant)
            return "kernel " + std::to_string(I) + " writes value " +
                   std::to_string(R.Value) + ", which only the runtime fills";
          FirstWrite[R.Value] = std::min(FirstWrite[R.Value], I + 1);
        } else if (FirstWrite[R.Value] > I) {
          return "kernel " + std::to_string(I) + " reads value " +
                 std::to_string(R.Value) + " before anything writes it";
        }
      }
  }
  // Ops own their kernels: forwards in op order, then backwards in reverse.
  uint32_t Next = 0;
  for (size_t O = 0; O < NO; ++O) {
    const Interval &F = P.Ops[O].Forward;
    if (F.Begin != Next || F.End < F.Begin || F.End > NK)
      return "the forward kernels of op " + std::to_string(O) +
             " do not follow the previous op's";
    Next = F.End;
  }
  for (size_t O = NO; O-- > 0;) {
    const Interval &B = P.Ops[O].Backward;
    if (B.Begin != Next || B.End < B.Begin || B.End > NK)
      return "the backward kernels of op " + std::to_string(O) +
             " do not follow the next op's";
    Next = B.End;
  }
  if (NO && Next != NK)
    return "kernels belong to no op";
  for (size_t O = 0; O < NO; ++O)
    for (int Bwd = 0; Bwd < 2; ++Bwd) {
      const Interval &R = Bwd ? P.Ops[O].Backward : P.Ops[O].Forward;
      for (uint32_t K = R.Begin; K < R.End; ++K)
        if (P.Kernels[K].Op != O || P.Kernels[K].Backward != bool(Bwd))
          return "kernel " + std::to_string(K) + " does not say it is op " +
                 std::to_string(O) + "'s";
    }
  const Compute &T = P.Training;
  for (uint32_t V : T.Inputs)
    if (V >= NV || P.Values[V].Kind != ValueKind::Input)
      return "a training input is not an input value";
  for (uint32_t V : T.Targets)
    if (V >= NV || P.Values[V].Kind != ValueKind::Target)
      return "a training target is not a target value";
  if (NK && (T.LossValue >= NV || P.Values[T.LossValue].Kind != ValueKind::Loss))
    return "the loss is not a loss value";
  return "";
}

} // namespace

std::string checkPlan(const Plan &P, PlanStage Stage) {
  auto Has = [&](PlanStage S) { return Stage >= S; };
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
  if (S.HpzPartition == 0 || S.WorldSize % S.HpzPartition ||
      (S.HpzPartition > 1 &&
       (S.ZeroStage != 3 || S.ParamOffload != OffloadDevice::None)))
    return "settings: the hpZ group size is 0, does not divide the world "
           "size, or is set outside stage 3 or with parameter offload";
  if (S.QuantizedWeights && S.ZeroStage != 3)
    return "settings: qwZ's quantized gathers are set outside stage 3";
  if (S.QuantizedGradients &&
      (S.ZeroStage != 3 ||
       (S.Nodes > 1 &&
        (S.CommDType != DType::F16 || S.ParamDType != DType::F16 ||
         !S.AverageGradients || S.OptimizerOffload != OffloadDevice::None ||
         S.ParamOffload != OffloadDevice::None))))
    return "settings: qgZ is set outside stage 3, or across nodes with "
           "gradients other than fp16, summed, or offloaded";
  if (S.MicsShard &&
      (S.ZeroStage != 3 || S.WorldSize % S.MicsShard || S.HpzPartition > 1 ||
       S.QuantizedWeights || S.QuantizedGradients ||
       (replicaRanks(S) > 1 && S.OptimizerOffload != OffloadDevice::None)))
    return "settings: the MiCS shard group does not divide the world size, "
           "or is set outside stage 3, with ZeRO++, or with offload across "
           "replicas";
  if (S.CtaPolicy == CommCtaPolicy::Zero && NC > 1)
    return "settings: NCCL's zero-CTA policy with ranks of unequal "
           "partitions (their arenas differ, the symmetric window needs "
           "them alike)";
  // Ranks, and the ranks a partition is split over.
  const uint64_t W = S.WorldSize, Parts = partitionRanks(S);
  const std::vector<KernelRate> &Rates = S.Machine.KernelRates;
  for (size_t I = 0; I < Rates.size(); ++I) {
    bool Known = false;
    for (unsigned K = 0; K < EnumInfo<KernelKind>::Count; ++K)
      Known |= Rates[I].Kind == EnumInfo<KernelKind>::Names[K];
    if (!Known)
      return "hardware: kernel rate " + std::to_string(I) +
             " names no kernel kind";
    for (size_t J = 0; J < I; ++J)
      if (Rates[J].Kind == Rates[I].Kind &&
          Rates[J].Backward == Rates[I].Backward)
        return "hardware: two kernel rates for " +
               kindLabel(Rates[I].Kind, Rates[I].Backward);
  }
  for (const auto &[Links, What] :
       {std::pair{&S.Machine.CollectiveRates, "collective rate"},
        std::pair{&S.Machine.InterNodeRates, "inter-node rate"}})
    for (size_t I = 0; I < Links->size(); ++I) {
      bool Known = false;
      for (unsigned K = 0; K < EnumInfo<Collective>::Count; ++K)
        Known |= (*Links)[I].Kind == EnumInfo<Collective>::Names[K];
      if (!Known)
        return std::string("hardware: ") + What + " " + std::to_string(I) +
               " names no collective";
      if (!(*Links)[I].BusBytesPerSec)
        return std::string("hardware: ") + What + " " + std::to_string(I) +
               " (" + (*Links)[I].Kind + ") is 0 bytes a second";
      for (size_t J = 0; J < I; ++J)
        if ((*Links)[J].Kind == (*Links)[I].Kind)
          return std::string("hardware: two ") + What + "s for " +
                 (*Links)[I].Kind;
    }
  const std::vector<GemmAlgorithm> &Algos = S.Machine.GemmAlgorithms;
  for (size_t I = 0; I < Algos.size(); ++I) {
    if (std::string Misfit = Algos[I].misfit(); !Misfit.empty())
      return "hardware: gemm algorithm " + std::to_string(I) + ": " + Misfit;
    for (size_t J = 0; J < I; ++J)
      if (sameProduct(Algos[J].Product, Algos[I].Product) &&
          Algos[J].Type == Algos[I].Type)
        return "hardware: two gemm algorithms for one product (" +
               std::to_string(J) + " and " + std::to_string(I) + ")";
  }
  if (!isFloatType(S.ParamDType) || !isFloatType(S.CommDType) ||
      !isFloatType(S.GradAccumDType) || !isFloatType(S.MasterDType) ||
      !isFloatType(S.OptimizerStateDType))
    return "settings: a parameter, gradient or optimizer type is not a "
           "floating-point type";
  if (S.ParamDType == DType::F16) {
    // The scale lives in a float: 2^127 is the largest power it holds.
    char *End = nullptr;
    double Static = std::strtod(S.LossScale.c_str(), &End);
    if (S.LossScale.empty() || *End || !(Static >= 0) || Static > 3e38)
      return "settings: the fp16 loss scale is not a number from 0 (dynamic) "
             "up to 3e38";
    if (Static == 0 && (S.LossScaleWindow == 0 || S.MinLossScale == 0 ||
                        S.InitialScalePower > 127))
      return "settings: dynamic loss scaling needs a window and a minimum "
             "scale above 0 and an initial power of at most 127";
  }

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
    if (Has(PlanStage::Partitioned) && S.ZeroStage == 3 &&
        T.ShardElems != (T.Elems + Parts - 1) / Parts)
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
  if (S.ZeroStage > 0 && (L.PartitionElems > UINT64_MAX / Parts ||
                          L.PartitionElems * Parts != L.PaddedElems ||
                          L.PaddedElems < L.FlatElems))
    return "partition: the padded size is not the partition times the "
           "ranks it is split over, or is below the flat size";
  for (const SubGroup &G : L.SubGroups)
    if (G.FirstTensor > G.EndTensor || G.EndTensor > L.Order.size())
      return "a sub-group lies outside the partition order";
  if (NC == 0 && Has(PlanStage::Partitioned))
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
  if (Next != W && Has(PlanStage::Partitioned))
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
    }
    if (X.Owner >= Limit)
      return Bad("the owner of transfer", I);
    // Only offloaded gradients are converted on the host apart from a copy,
    // out of the staging slot their copy filled.
    if (X.Kind == TransferKind::HostConvert &&
        (X.Point != TransferPoint::AfterReduce || !X.Staged))
      return Bad("the point of host conversion", I);
    if (X.Staged && X.Point != TransferPoint::AfterReduce)
      return Bad("the point of staged transfer", I);
  }

  std::vector<bool> Gathered(NU, false), GatheredOnce(NU, false);
  // MiCS: each bucket's all-reduce across the replicas, exactly once, after
  // that bucket's reduction in the last micro step on the same stream
  // (which orders the two), before the step reads the gradients.
  std::vector<uint32_t> LastReduceOn(NB, NoIndex), ReplicaReduces(NB, 0);
  // ZeRO++ qgZ across nodes: a bucket with quantized gradients sends them
  // between nodes exactly once after each of its reductions, on the same
  // stream, in the same micro step, before the step reads them; and as
  // every quantized reduction goes through one workspace, they all run on
  // one stream, each sent across nodes before the next begins.
  std::vector<bool> Quantizes(NB, false);
  for (size_t B = 0; B < NB && qgzAcrossNodes(S); ++B)
    Quantizes[B] = !qgzLayout(P, uint32_t(B)).Pieces.empty();
  const Instruction *AwaitingNodes = nullptr, *FirstQuantized = nullptr;
  bool Stepped = false;
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
    case InstrKind::GatherSecondary:
    case InstrKind::Release:
      Limit = NU;
      StreamOK = In.On == (In.Kind == InstrKind::Release ? Stream::Compute
                                                         : Stream::Comm);
      break;
    case InstrKind::Reduce:
    case InstrKind::ReduceReplicas:
    case InstrKind::ReduceAcrossNodes:
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
    case InstrKind::ClipGradients:
      Limit = NoIndex;
      StreamOK = In.On == Stream::Compute || In.On == Stream::Host;
      break;
    }
    if (In.Kind != InstrKind::GatherParams &&
        In.Kind != InstrKind::ClipGradients && In.Arg >= Limit)
      return Bad("the argument of instruction", I);
    if (!StreamOK)
      return "instruction " + std::to_string(I) + " runs on a stream its "
             "kind cannot use";
    for (uint32_t Wt : In.Waits)
      if (Wt >= I)
        return Bad("a wait of instruction", I);
    if (In.Micro >= S.GradAccum)
      return Bad("the micro step of instruction", I);
    if (In.Kind == InstrKind::Gather ||
        In.Kind == InstrKind::GatherSecondary ||
        In.Kind == InstrKind::Release) {
      bool Gather = In.Kind != InstrKind::Release;
      if (Gathered[In.Arg] == Gather)
        return "instruction " + std::to_string(I) +
               (Gather ? " gathers a unit already gathered"
                       : " releases a unit that is not gathered");
      Gathered[In.Arg] = Gather;
    }
    // A secondary partition exists from the unit's first gather of the
    // step on, and only where the plan gave the unit one.
    if (In.Kind == InstrKind::Gather)
      GatheredOnce[In.Arg] = true;
    if (In.Kind == InstrKind::GatherSecondary &&
        (S.HpzPartition < 2 || !GatheredOnce[In.Arg] ||
         (Has(PlanStage::Placed) &&
          (In.Arg >= P.Places.Units.size() ||
           P.Places.Units[In.Arg].Secondary == NoIndex))))
      return "instruction " + std::to_string(I) + " gathers a unit from an "
             "hpZ secondary partition it does not have";
    if (In.Kind == InstrKind::Reduce && In.Micro + 1 == S.GradAccum) {
      if (ReplicaReduces[In.Arg])
        return "instruction " + std::to_string(I) + " reduces a bucket "
               "after its all-reduce across the MiCS replicas";
      LastReduceOn[In.Arg] = uint32_t(In.On);
    }
    Stepped |= In.Kind == InstrKind::ClipGradients ||
               In.Kind == InstrKind::OptimizerStep;
    if (In.Kind == InstrKind::Reduce && Quantizes[In.Arg]) {
      if (AwaitingNodes)
        return "instruction " + std::to_string(I) + " starts a quantized "
               "reduction before the last one was sent across nodes";
      if (!FirstQuantized)
        FirstQuantized = &In;
      if (FirstQuantized->On != In.On)
        return "instruction " + std::to_string(I) + " runs a quantized "
               "reduction on another stream than the others";
      AwaitingNodes = &In;
    }
    if (In.Kind == InstrKind::ReduceAcrossNodes) {
      const Instruction *R = AwaitingNodes;
      if (!R || R->Arg != In.Arg || Stepped || R->On != In.On ||
          R->Micro != In.Micro)
        return "instruction " + std::to_string(I) + " sends across nodes a "
               "bucket with no quantized reduction before it in its micro "
               "step on its stream, or after the step";
      AwaitingNodes = nullptr;
    }
    if (In.Kind == InstrKind::ReduceReplicas &&
        (replicaRanks(S) < 2 || In.Micro + 1 != S.GradAccum || Stepped ||
         LastReduceOn[In.Arg] != uint32_t(In.On) ||
         ReplicaReduces[In.Arg]++))
      return "instruction " + std::to_string(I) + " all-reduces across MiCS "
             "replicas the plan does not have, not once after its bucket's "
             "reduction in the last micro step on its stream, or after the "
             "step";
  }
  for (bool G : Gathered)
    if (G)
      return "a fetch unit is still gathered at the end of the step";
  if (AwaitingNodes)
    return "bucket " + std::to_string(AwaitingNodes->Arg) + "'s quantized "
           "reduction is never sent across nodes";
  if (Has(PlanStage::Scheduled) && replicaRanks(S) > 1 && S.ZeroStage == 3)
    for (size_t B = 0; B < NB; ++B)
      if (!ReplicaReduces[B])
        return "bucket " + std::to_string(B) + " is never all-reduced "
               "across the MiCS replicas";

  if (Has(PlanStage::Complete) && P.Estimates.Ranks.size() != NC)
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
    for (size_t C = 0; C < NC && Has(PlanStage::Complete); ++C) {
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
  if (std::string E = checkCompute(P); !E.empty())
    return E;
  if (Has(PlanStage::Placed))
    if (std::string E = checkPlacement(P); !E.empty())
      return E;
  for (size_t C = 0; C < NC && Has(PlanStage::MemoryPlanned); ++C)
    if (std::string E = checkMemoryOrdering(P, C); !E.empty())
      return E;
  return "";
}


} // namespace dsc::plan
