//===- Steps.cpp - What each instruction does -----------------------------===//
//
// Where everything sits is the plan's (its views, Arena.h). With synthetic
// compute, forward and backward run GEMMs of the op's real shapes on their
// operands (timing), and backward writes each completed gradient as the
// known function Synthetic.h defines, where DeepSpeed would put it.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "Gemms.h"
#include "HostMath.h"
#include "Kernels.h"
#include "NcclGroup.h"
#include "dsc/PlanFacts.h"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace plan = dsc::plan;

namespace dsrun {

//===----------------------------------------------------------------------===//
// Compute.
//===----------------------------------------------------------------------===//

void Executor::gemms(const plan::Op &Op, bool Backward) {
  if (Options.Compute != RunOptions::ComputeMode::Synthetic)
    return;
  const plan::Interval &R = Backward ? Op.Backward : Op.Forward;
  auto At = [&](const plan::TensorRef &Ref) {
    return Buffers.at(P.Places.Values[Ref.Value], Ref.Offset);
  };
  for (uint32_t K = R.Begin; K < R.End; ++K) {
    const plan::Kernel &Kr = P.Kernels[K];
    if (Kr.kind() == plan::KernelKind::Gemm)
      CHECK_CUBLAS(runGemmKernel(Cublas, Kr, At(Kr.Inputs[0]), At(Kr.Inputs[1]),
                                 At(Kr.Outputs[0]), ParamType));
  }
}

void Executor::compute(const Instr &C, bool Backward) {
  if (real())
    runKernels(C, Backward);
  else
    gemms(P.Ops[C.In.Arg], Backward);
}

//===----------------------------------------------------------------------===//
// Gradients and their reduction.
//===----------------------------------------------------------------------===//

void Executor::gradients(const Instr &C) {
  bool Any = false;
  for (uint32_t T : P.Ops[C.In.Arg].Params)
    if (P.Tensors[T].FirstUse == C.In.Arg &&
        P.Tensors[T].Role == plan::TensorRole::Trainable) {
      if (!Any)
        Model.beginHooks(C.S);
      Any = true;
      gradientOf(T, C.In.Micro, C.S);
    }
  if (Any)
    Model.endHooks(C.S);
}

void Executor::gradientOf(uint32_t T, uint32_t Micro, cudaStream_t S) {
  const plan::Tensor &X = P.Tensors[T];
  const plan::Bucket &Bucket = P.Buckets[BucketOfTensor[T]];
  uint32_t Rank = Process.Rank;
  // Where the backward left it (real), and where the reduction wants it.
  char *Computed = real() ? Buffers.at(P.Places.Values[GradValue[T]]) : nullptr;
  uint32_t Slot = P.Places.Tensors[T].Grad;
  if (Stage < 2) {
    // Accumulated into the flat gradient buffer (the hook of stage 0/1).
    if (Computed)
      launchCopyConvert(Buffers.at(Slot), ParamType, Computed, ParamType, X.Elems,
                        Micro > 0, S);
    else
      launchFillGrad(Buffers.at(Slot), ParamType, X.Elems, X.Elems, Rank, DeviceStep,
                     Micro, T, 0, Micro > 0, S);
    return;
  }
  // Stage 2/3: the backward's gradient, then the hook copies it to the
  // bucket.
  char *Transient = Buffers.at(P.Places.Values[GradValue[T]]);
  unsigned PB = elementBytes(ParamType);
  uint64_t Padded = Stage == 3 ? X.ShardElems * Shards : X.Elems;
  if (!Computed)
    launchFillGrad(Transient, ParamType, Padded, X.Elems, Rank, DeviceStep,
                   Micro, T, 0, false, S);
  else if (Padded > X.Elems) // Reduced whole: the padding must be zero.
    CHECK_CUDA(cudaMemsetAsync(Transient + X.Elems * PB, 0,
                               (Padded - X.Elems) * PB, S));
  if (Bucket.InPlace)
    return; // Reduced from where the backward left it.
  if (Stage == 2) {
    launchCopyConvert(Buffers.at(Slot), ParamType, Transient, ParamType, X.Elems,
                      false, S);
    return;
  }
  // Each rank's shard into its chunk: the slot's rank stride is a chunk.
  const plan::View &V = Buffers.view(Slot);
  uint64_t SlotBytes = plan::dtypeBytes(V.Type);
  launchScatterToChunks(Buffers.whole(Slot) - V.Offset, ElementType(V.Type),
                        Transient, ParamType, X.Elems, X.ShardElems, Shards,
                        V.RankStride / SlotBytes, V.Offset / SlotBytes, S);
}

void Executor::reduce(const Instr &C) {
  uint32_t B = C.In.Arg, Micro = C.In.Micro;
  const plan::Bucket &Bucket = P.Buckets[B];
  const plan::BucketViews &BV = P.Places.Buckets[B];
  bool Offloaded = P.Settings.OptimizerOffload != plan::OffloadDevice::None;
  // Parameters no op uses get their gradient only now.
  for (const plan::Segment &Seg : Bucket.Segments)
    if (P.Tensors[Seg.Tensor].FirstUse == plan::NoIndex)
      gradientOf(Seg.Tensor, Micro, C.S);

  // ZeRO++ qgZ across nodes: the quantized gradients' 4-bit blocks for
  // the node's ranks, exchanged beside the other gradients'
  // reduce-scatters, and what arrives summed for the exchange across
  // nodes, which adds the bucket to the partition.
  const plan::QgzLayout &L = QgzLayouts[B];
  char *Qgz = nullptr;
  if (BV.Qgz != plan::NoIndex) {
    Qgz = Buffers.at(BV.Qgz);
    for (const plan::QgzLayout::Piece &Pc : L.Pieces)
      launchQgzQuantize(Qgz + L.Send1,
                        Buffers.whole(P.Places.Tensors[Pc.Tensor].Grad),
                        qgzShape(P.Settings, L, Pc, P.Tensors[Pc.Tensor]),
                        C.S);
  }
  collectives(C);
  if (Qgz) {
    for (const plan::QgzLayout::Piece &Pc : L.Pieces)
      launchQgzSum(Qgz + L.Send2, Qgz + L.Recv1,
                   qgzShape(P.Settings, L, Pc, P.Tensors[Pc.Tensor]), C.S);
    return;
  }
  if (Stage < 2 || Offloaded)
    return; // Offloaded gradients go to the host as a transfer next.
  uint32_t Owned = P.Places.Owned.Grads;
  if (Stage == 2) {
    // This rank's piece, reduced to it, into its gradient partition.
    for (const plan::BucketPiece &Piece : BV.Pieces)
      if (Piece.Root == uint32_t(Process.Rank))
        launchCopyConvert(Buffers.at(Owned, Piece.PartitionOffset), ParamType,
                          Buffers.at(Piece.View), ParamType, Buffers.elems(Piece.View),
                          plan::gradientsAdd(P.Settings, Micro), C.S);
    return;
  }
  accumulateShards(B, Micro, C.S);
}

void Executor::reduceAcrossNodes(const Instr &C) {
  uint32_t B = C.In.Arg;
  const plan::QgzLayout &L = QgzLayouts[B];
  char *Qgz = Buffers.at(P.Places.Buckets[B].Qgz);
  collectives(C);
  // DeepSpeed divides the sum over every rank by the nodes, leaving
  // GPUs-a-node times the mean: the gradients here arrive divided by the
  // world (real) or are divided by it at the step (synthetic), so times
  // GPUs a node gives DeepSpeed's value either way.
  for (const plan::QgzLayout::Piece &Pc : L.Pieces)
    launchQgzFinish(Buffers.at(P.Places.Tensors[Pc.Tensor].Grad),
                    Qgz + L.Recv2,
                    qgzShape(P.Settings, L, Pc, P.Tensors[Pc.Tensor]),
                    float(P.Settings.GpusPerNode), C.S);
  accumulateShards(B, C.In.Micro, C.S);
}

void Executor::accumulateShards(uint32_t B, uint32_t Micro, cudaStream_t S) {
  uint32_t Owned = P.Places.Owned.Grads;
  for (const plan::Segment &Seg : P.Buckets[B].Segments) {
    const plan::TensorViews &V = P.Places.Tensors[Seg.Tensor];
    launchCopyConvert(Buffers.at(Owned, V.PartitionOffset), GradAccumType,
                      Buffers.at(V.Grad), ElementType(Buffers.view(V.Grad).Type),
                      P.Tensors[Seg.Tensor].ShardElems,
                      plan::gradientsAdd(P.Settings, Micro), S);
  }
}

//===----------------------------------------------------------------------===//
// Parameters.
//===----------------------------------------------------------------------===//

void Executor::collectives(const Instr &C) {
  const std::vector<CollectiveCall> &Group = Calls[C.Index];
  if (Group.empty())
    return; // A stage-3 step with no persistent parameters gathers none.
  Timing.measureBegin(C);
  const char *Failed = nullptr;
  if (ncclResult_t R = issueGroup(Group, Buffers.deviceBase(),
                                  communicators(), World, C.S, Failed))
    fatalError(std::string(Failed) + " failed: " + ncclGetErrorString(R) +
               whereNow());
  Timing.measureEnd(C);
}

void Executor::gatherUnit(const Instr &C) {
  uint32_t U = C.In.Arg;
  const plan::UnitViews &UV = P.Places.Units[U];
  // ZeRO++ qwZ: what this rank sends (its chunk, or within an hpZ group
  // its secondary partition) goes as int8 bytes and a scale per group;
  // every sender's come back and are dequantized into the target.
  // Views: what is sent, its int8 bytes and scales, every sender's scales.
  bool InGroup = C.In.Kind == plan::InstrKind::GatherSecondary;
  uint32_t From = InGroup ? UV.Secondary : UV.Send;
  uint32_t Sent = InGroup ? UV.QuantizedSecondarySend : UV.QuantizedSend;
  uint32_t Kept = InGroup ? UV.ScalesSecondarySend : UV.ScalesSend;
  uint32_t AllKept = InGroup ? UV.ScalesSecondary : UV.Scales;
  bool Quantized = Sent != plan::NoIndex;
  if (Quantized)
    launchQuantizeInt8(Buffers.at(Sent), Buffers.at(Kept), Buffers.at(From),
                       ParamType, Buffers.elems(Sent), Buffers.elems(Kept),
                       C.S);
  collectives(C);
  if (Quantized)
    launchDequantizeInt8(Buffers.at(UV.Target), ParamType,
                         Buffers.at(UV.Quantized), Buffers.at(AllKept),
                         Buffers.elems(UV.Quantized),
                         Buffers.elems(Sent) / Buffers.elems(Kept), C.S);
  if (C.In.Kind == plan::InstrKind::Gather && UV.Secondary != plan::NoIndex) {
    // ZeRO++ hpZ: keep this rank's slice of the gather for the unit's
    // later gathers in the step, which stay within its group.
    uint64_t Bytes = Buffers.elems(UV.Secondary) * elementBytes(ParamType);
    uint32_t Member = uint32_t(Process.Rank) % P.Settings.HpzPartition;
    CHECK_CUDA(cudaMemcpyAsync(Buffers.at(UV.Secondary),
                               Buffers.at(UV.Target) + Member * Bytes, Bytes,
                               cudaMemcpyDeviceToDevice, C.S));
  }
  if (!plan::unitGathersRankMajor(P, U))
    return;
  // Rank r's shard of a tensor sits at r * chunk + the tensor's offset in
  // the chunk. One kernel for up to eight tensors: at a step's hundreds of
  // gathers, launches on the communication stream are what it costs (a
  // strided cudaMemcpy2DAsync, or copy-engine copies, were slower).
  unsigned PB = elementBytes(ParamType);
  uint64_t Chunk = Buffers.elems(UV.Send);
  UnpackTable Table;
  auto Flush = [&] {
    launchUnpackUnit(Buffers.at(UV.Whole), Buffers.at(UV.Target), PB, Table,
                     Shards, Chunk, C.S);
    Table.Count = 0;
  };
  for (uint32_t Tn : P.FetchUnits[U].Tensors) {
    const plan::TensorViews &V = P.Places.Tensors[Tn];
    Table.UnitOffset[Table.Count] =
        (Buffers.offset(V.Param) - Buffers.offset(UV.Whole)) / PB;
    Table.ChunkOffset[Table.Count] = chunkOffset(U, Tn);
    Table.Shard[Table.Count] = P.Tensors[Tn].ShardElems;
    if (++Table.Count == UnpackTable::Capacity)
      Flush();
  }
  Flush();
}

uint64_t Executor::chunkOffset(uint32_t U, uint32_t Tn) const {
  if (!plan::unitGathersRankMajor(P, U))
    return 0;
  return (Buffers.wholeOffset(P.Places.Tensors[Tn].Chunk) -
          Buffers.offset(P.Places.Units[U].Target)) /
         elementBytes(ParamType);
}

void Executor::clipGradients(const Instr &C) {
  plan::ScratchLayout SL =
      plan::scratchLayout(P.Program.size(), P.Settings.GradAccum);
  float *Scratch = reinterpret_cast<float *>(Buffers.at(P.Places.Runtime.Scratch));
  float *Sum = Scratch + SL.Norm, *Partials = Scratch + SL.Partials;
  unsigned Blocks = unsigned(plan::ScratchLayout::NormBlocks);
  float MaxNorm =
      float(std::strtod(P.Settings.GradientClipping.c_str(), nullptr));
  // The gradients this rank owns, as the reduction (or at stage 0-2 with
  // the optimizer offloaded, the host's fp32 partition) holds them.
  const plan::PartitionViews &O = P.Places.Owned;
  bool OnHost = C.In.On == plan::Stream::Host;
  uint32_t Owned = OnHost && Stage < 3 ? O.GradsFP32 : O.Grads;
  ElementType Type = ElementType(Buffers.view(Owned).Type);
  uint64_t N = plan::ownedRealElems(P, Process.Rank);
  if (OnHost) {
    // Summed by the host stream, in fixed chunks added in order (the same
    // gradients, the same norm); only the sum travels. The host's Clip
    // holds it until the factor replaces it.
    float *HostSum = &HostStep->Clip;
    const char *Grads = Buffers.at(Owned);
    unsigned Threads = Options.HostThreads;
    Timing.onHost(C,
             [=] { *HostSum = float(sumOfSquares(Grads, Type, N, Threads)); });
    CHECK_CUDA(cudaMemcpyAsync(Sum, HostSum, sizeof(float),
                               cudaMemcpyHostToDevice, C.S));
  } else {
    if (N)
      launchSumSquares(Buffers.at(Owned), Type, N, Partials, Blocks, C.S);
    launchSumPartials(Partials, Blocks, Sum, C.S);
  }
  // Stage 0 ranks hold every gradient; the others sum their partitions
  // (with MiCS those of the shard group: its replicas hold the same).
  if (Stage > 0 && Shards > 1)
    CHECK_NCCL(ncclAllReduce(Sum, Sum, 1, ncclFloat32, ncclSum, shardComm(),
                             C.S));
  launchClipFactor(Sum, rankGradScale(), MaxNorm, DeviceStep, C.S);
  // The factor and the overflow flag, for the host optimizer and the report.
  static_assert(offsetof(StepValues, Overflow) ==
                offsetof(StepValues, Clip) + sizeof(float));
  CHECK_CUDA(cudaMemcpyAsync(&HostStep->Clip, &DeviceStep->Clip,
                             sizeof(float) + sizeof(uint32_t),
                             cudaMemcpyDeviceToHost, C.S));
}

void Executor::optimizerStep(const Instr &C) {
  uint32_t G = C.In.Arg;
  std::string Error;
  AdamW W = adamwFor(P.Settings, OptimizerStep, Error);
  if (!Error.empty())
    fatalError(Error);
  W.GradScale = rankGradScale();
  const plan::PartitionViews &O = P.Places.Owned;
  uint64_t Lo = P.Places.SubGroups[G].Begin;
  uint64_t N = P.Layout.SubGroups[G].Elems;
  // The pieces this rank owns in the sub-group: stage 3 writes the updated
  // shards back tensor by tensor.
  std::vector<plan::OwnedPiece> Pieces;
  for (const plan::OwnedPiece &Piece : plan::ownedPieces(P, Process.Rank))
    if (Piece.PartitionOffset >= Lo && Piece.PartitionOffset < Lo + N)
      Pieces.push_back(Piece);

  if (C.In.On == plan::Stream::Host) {
    uint32_t I = C.Index;
    bool Fp32Grads = Stage < 3;
    const char *Grads = Buffers.at(Fp32Grads ? O.GradsFP32 : O.Grads, Lo);
    ElementType GradType = Fp32Grads ? ElementType::F32 : GradAccumType;
    bool HostParams = P.Settings.ParamOffload == plan::OffloadDevice::CPU;
    // Parameters on the device get their 16-bit copy in the same pass,
    // into the staging the transfer after the step copies from.
    void *Staged = P.Settings.ParamOffload == plan::OffloadDevice::None
                       ? Buffers.at(P.Places.Runtime.ParamStaging)
                       : nullptr;
    Timing.onHost(C, [=] {
      HostState H = hostState(G);
      if (HostStep->Overflow) {
        // Skipped (fp16); this step's flag, read back by now. The copy to
        // the device after the step still reads the staging: the weights
        // as they are.
        Counts.HostAdamNanos[I] = 0;
        if (Staged)
          timedConvert(I, Staged, ParamType, H.Master, ElementType::F32, N,
                       false);
        return;
      }
      AdamW Now = W;
      Now.GradScale *= HostStep->Clip;
      Counts.HostAdamNanos[I] = nanosToRun([&] {
        hostAdamW(Now, Grads, GradType, H.Master, H.M, H.V, N,
                  Options.HostThreads, Staged, ParamType);
      });
      if (!HostParams)
        return; // On NVMe: written by the transfer after the step.
      // Parameters live on the host: the update lands there directly
      // (persistent ones go back to the device as a transfer).
      for (const plan::OwnedPiece &Piece : Pieces) {
        if (P.Tensors[Piece.Tensor].Persistent)
          continue;
        timedConvert(I, Buffers.at(P.Places.Tensors[Piece.Tensor].Shard), ParamType,
                     H.Master + (Piece.PartitionOffset - Lo), ElementType::F32,
                     Piece.End - Piece.Begin, false);
      }
    });
    return;
  }

  // On the device: one pass reads the gradients as they are, updates, and
  // at stages 0-2 writes the 16-bit parameters (the plan's gradient buffer
  // of the partition in the master dtype stays unused: DeepSpeed fills it,
  // the fused update needs no copy).
  ElementType StateType = ElementType(Buffers.view(O.Master).Type);
  void *Master = Buffers.at(O.Master, Lo);
  void *M = Buffers.at(O.Moment1, Lo), *V = Buffers.at(O.Moment2, Lo);
  if (Stage < 3) {
    // fp32 training at stage 0 steps from the gradients themselves; the
    // padding of the last partition holds no gradient.
    bool Fp32 = !Buffers.at(O.GradsFP32);
    uint64_t Real = plan::ownedRealElems(P, Process.Rank);
    Real = Real > Lo ? std::min(Real - Lo, N) : 0;
    // The updated partition back into the 16-bit parameters, unless they
    // are the master weights themselves (fp32 at stage 0).
    bool Params16 = Buffers.at(O.Params16) != Buffers.at(O.Master);
    launchAdamW(Master, M, V, StateType, Buffers.at(O.Grads, Lo),
                Fp32 ? ElementType::F32 : ParamType, Fp32 ? N : Real, N,
                Params16 ? Buffers.at(O.Params16, Lo) : nullptr, ParamType, W,
                DeviceStep, C.S);
    return;
  }
  launchAdamW(Master, M, V, StateType, Buffers.at(O.Grads, Lo), GradAccumType,
              N, N, nullptr, ParamType, W, DeviceStep, C.S);
  unsigned SB = elementBytes(StateType);
  for (const plan::OwnedPiece &Piece : Pieces)
    launchCopyConvert(Buffers.at(P.Places.Tensors[Piece.Tensor].Shard), ParamType,
                      static_cast<char *>(Master) +
                          (Piece.PartitionOffset - Lo) * SB,
                      StateType, Piece.End - Piece.Begin, false, C.S);
}

} // namespace dsrun
