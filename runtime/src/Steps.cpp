//===- Steps.cpp - What each instruction does -----------------------------===//
//
// The conventions of where tensors sit are Layout.h's. With synthetic
// compute, forward and backward run GEMMs of the op's real shapes on
// scratch (timing), and backward writes each completed gradient as the
// known function Synthetic.h defines, where DeepSpeed would put it.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "Gemms.h"
#include "HostMath.h"
#include "Kernels.h"
#include "NcclGroup.h"

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
  for (uint32_t K = R.Begin; K < R.End; ++K) {
    const plan::Kernel &Kr = P.Kernels[K];
    if (Kr.Kind == plan::KernelKind::Gemm)
      CHECK_CUBLAS(runGemmKernel(Cublas, Kr, address(Kr.Inputs[0]),
                                 address(Kr.Inputs[1]),
                                 address(Kr.Outputs[0]), L.Param));
  }
}

void Executor::compute(const plan::Instruction &In, bool Backward,
                       uint32_t Step) {
  if (real())
    runKernels(In, Backward, Step);
  else
    gemms(P.Ops[In.Arg], Backward);
}

//===----------------------------------------------------------------------===//
// Gradients and their reduction.
//===----------------------------------------------------------------------===//

void Executor::gradients(uint32_t Op, uint32_t Micro, cudaStream_t S) {
  for (uint32_t T : P.Ops[Op].Params)
    if (P.Tensors[T].FirstUse == Op &&
        P.Tensors[T].Role == plan::TensorRole::Trainable)
      gradientOf(T, Micro, S);
}

void Executor::gradientOf(uint32_t T, uint32_t Micro, cudaStream_t S) {
  const plan::Tensor &X = P.Tensors[T];
  unsigned PB = elementBytes(L.Param);
  uint32_t Rank = Process.Rank;
  char *Computed = real() ? ValueAddress[L.GradValue[T]] : nullptr;
  if (L.Stage < 2) {
    // Accumulated into the flat gradient buffer (the hook of stage 0/1).
    char *Flat = device("grads16") + X.FlatOffset * PB;
    if (Computed)
      launchCopyConvert(Flat, L.Param, Computed, L.Param, X.Elems, Micro > 0,
                        S);
    else
      launchFillGrad(Flat, L.Param, X.Elems, X.Elems, Rank, DeviceStep, Micro,
                     T, 0, Micro > 0, S);
    return;
  }
  // Stage 2/3: the backward's gradient, then the hook copies it to the
  // bucket.
  uint32_t B = BucketOfTensor[T], Seg = SegmentOfTensor[T];
  const plan::Bucket &Bucket = P.Buckets[B];
  char *Transient = ValueAddress[L.GradValue[T]];
  uint64_t Padded = L.Stage == 3 ? X.ShardElems * L.World : X.Elems;
  if (!Computed)
    launchFillGrad(Transient, L.Param, Padded, X.Elems, Rank, DeviceStep,
                   Micro, T, 0, false, S);
  else if (Padded > X.Elems) // Reduced whole: the padding must be zero.
    CHECK_CUDA(cudaMemsetAsync(Transient + X.Elems * PB, 0,
                               (Padded - X.Elems) * PB, S));
  if (Bucket.BufferIndex == plan::NoIndex)
    return; // Reduced in place, from where autograd left it.
  const BucketLayout &BL = L.Buckets[B];
  char *Ipg = DeviceArena + BL.SourceOffset;
  if (L.Stage == 2)
    launchCopyConvert(Ipg + (X.FlatOffset - BL.FlatBegin) * PB, L.Param,
                      Transient, L.Param, X.Elems, false, S);
  else
    launchScatterToChunks(Ipg, L.Comm, Transient, L.Param, X.Elems,
                          X.ShardElems, L.World, BL.ChunkElems,
                          BL.ChunkOffset[Seg], S);
}

void Executor::reduce(uint32_t B, uint32_t Micro, cudaStream_t S) {
  const plan::Bucket &Bucket = P.Buckets[B];
  const BucketLayout &BL = L.Buckets[B];
  unsigned PB = elementBytes(L.Param);
  bool Offloaded = P.Settings.OptimizerOffload != plan::OffloadDevice::None;
  // Parameters no op uses get their gradient only now.
  for (const plan::Segment &Seg : Bucket.Segments)
    if (P.Tensors[Seg.Tensor].FirstUse == plan::NoIndex)
      gradientOf(Seg.Tensor, Micro, S);

  collectives(S);
  if (L.Stage < 2 || Offloaded)
    return; // Offloaded gradients go to the host as a transfer next.
  char *Source = DeviceArena + BL.SourceOffset;
  if (L.Stage == 2) {
    // This rank's piece, reduced to it, into its gradient partition.
    uint64_t Lo = std::max(BL.FlatBegin, L.PartitionBegin);
    uint64_t Hi = std::min(BL.FlatEnd, L.PartitionEnd);
    for (const plan::Segment &Seg : Bucket.Segments) {
      const plan::Tensor &X = P.Tensors[Seg.Tensor];
      uint64_t A = std::max(Lo, X.FlatOffset);
      uint64_t Z = std::min(Hi, X.FlatOffset + X.Elems);
      if (A >= Z)
        continue;
      launchCopyConvert(device("grads16_partition") +
                            (L.gradPartitionOffset(Seg.Tensor) + A -
                             X.FlatOffset) *
                                PB,
                        L.Param, Source + (A - BL.SourceOrigin) * PB, L.Param,
                        Z - A,
                        Micro > 0, S);
    }
    return;
  }
  // Stage 3: this rank's chunk, accumulated into its gradient partition.
  unsigned GB = elementBytes(L.GradAccum), SB = elementBytes(BL.SourceType);
  char *Mine = Source + uint64_t(Process.Rank) * BL.ChunkElems * SB;
  for (size_t K = 0; K < Bucket.Segments.size(); ++K) {
    uint32_t T = Bucket.Segments[K].Tensor;
    launchCopyConvert(device("grads_partition") + L.orderOffset(T) * GB,
                      L.GradAccum, Mine + BL.ChunkOffset[K] * SB,
                      BL.SourceType, P.Tensors[T].ShardElems, Micro > 0, S);
  }
}

//===----------------------------------------------------------------------===//
// Parameters.
//===----------------------------------------------------------------------===//

void Executor::collectives(cudaStream_t S) {
  const std::vector<CollectiveCall> &Group = Calls[CurrentInstruction];
  if (Group.empty())
    return; // A stage-3 step with no persistent parameters gathers none.
  measureBegin(S);
  const char *Failed = nullptr;
  if (ncclResult_t R = issueGroup(Group, DeviceArena, Comm, S, Failed))
    fatalError(std::string(Failed) + " failed: " + ncclGetErrorString(R) +
               whereNow());
  measureEnd(S);
}

void Executor::gatherUnit(uint32_t U, cudaStream_t S) {
  collectives(S);
  if (!plan::unitGathersRankMajor(P, U))
    return;
  // Rank r's shard of a tensor sits at r * chunk + the tensor's offset in
  // the chunk. One kernel for up to eight tensors: at a step's hundreds of
  // gathers, launches on the communication stream are what it costs (a
  // strided cudaMemcpy2DAsync, or copy-engine copies, were slower).
  unsigned PB = elementBytes(L.Param);
  const char *Gathered = device(L.gatherTarget(U));
  char *Unit = device("unit." + std::to_string(U));
  UnpackTable Table;
  auto Flush = [&] {
    launchUnpackUnit(Unit, Gathered, PB, Table, L.World, L.chunkElems(U), S);
    Table.Count = 0;
  };
  for (uint32_t T : P.FetchUnits[U].Tensors) {
    Table.UnitOffset[Table.Count] = L.unitOffset(U, T);
    Table.ChunkOffset[Table.Count] = L.chunkOffset(U, T);
    Table.Shard[Table.Count] = P.Tensors[T].ShardElems;
    if (++Table.Count == UnpackTable::Capacity)
      Flush();
  }
  Flush();
}

void Executor::clipGradients(cudaStream_t S, bool OnHost) {
  plan::ScratchLayout SL =
      plan::scratchLayout(P.Program.size(), P.Settings.GradAccum);
  float *Scratch = reinterpret_cast<float *>(device("scratch"));
  float *Sum = Scratch + SL.Norm, *Partials = Scratch + SL.Partials;
  unsigned Blocks = unsigned(plan::ScratchLayout::NormBlocks);
  unsigned PB = elementBytes(L.Param);
  float MaxNorm = float(std::strtod(P.Settings.GradientClipping.c_str(), nullptr));
  if (OnHost) {
    // The gradients are on the host: summed there by the host stream, in
    // fixed chunks added in order (the same gradients, the same norm); only
    // the sum travels. HostStep->Clip holds it until the factor replaces it.
    float *HostSum = &HostStep->Clip;
    uint64_t N = P.Layout.PartitionElems;
    unsigned Threads = Options.HostThreads;
    onHost(S, CurrentInstruction, [=] {
      const char *Grads = L.Stage < 3 ? host("grads_fp32")
                                      : host("grads_partition");
      ElementType T = L.Stage < 3 ? ElementType::F32 : L.GradAccum;
      constexpr unsigned Chunks = 64;
      std::vector<double> Part(Chunks, 0.0);
      auto Work = [&](unsigned First) {
        for (unsigned C = First; C < Chunks; C += Threads)
          for (uint64_t I = N * C / Chunks; I < N * (C + 1) / Chunks; ++I) {
            double V = loadAs(Grads, I, T);
            Part[C] += V * V;
          }
      };
      std::vector<std::thread> Pool;
      for (unsigned K = 1; K < std::min(Threads, Chunks); ++K)
        Pool.emplace_back(Work, K);
      Work(0);
      for (std::thread &Th : Pool)
        Th.join();
      double Total = 0;
      for (double V : Part)
        Total += V;
      *HostSum = float(Total);
    });
    CHECK_CUDA(cudaMemcpyAsync(Sum, HostSum, sizeof(float),
                               cudaMemcpyHostToDevice, S));
  } else {
    if (L.Stage == 0) {
      launchSumSquares(device("grads16"), L.Param, P.Layout.FlatElems,
                       Partials, Blocks, S);
    } else if (L.Stage == 1) {
      uint64_t Real = std::min(L.PartitionEnd, P.Layout.FlatElems);
      if (Real > L.PartitionBegin)
        launchSumSquares(device("grads16") + L.PartitionBegin * PB, L.Param,
                         Real - L.PartitionBegin, Partials, Blocks, S);
    } else if (L.Stage == 2) {
      for (const OwnedRange &O : L.Owned)
        launchSumSquares(device("grads16_partition") +
                             (L.gradPartitionOffset(O.Tensor) + O.Begin) * PB,
                         L.Param, O.End - O.Begin, Partials, Blocks, S);
    } else {
      launchSumSquares(device("grads_partition"), L.GradAccum,
                       P.Layout.PartitionElems, Partials, Blocks, S);
    }
    launchSumPartials(Partials, Blocks, Sum, S);
  }
  // Stage 0 ranks hold every gradient; the others sum their partitions.
  if (L.Stage > 0 && L.World > 1)
    CHECK_NCCL(ncclAllReduce(Sum, Sum, 1, ncclFloat32, ncclSum, Comm, S));
  launchClipFactor(Sum, rankGradScale(), MaxNorm, DeviceStep, S);
  // The factor and the overflow flag, for the host optimizer and the report.
  static_assert(offsetof(StepValues, Overflow) ==
                offsetof(StepValues, Clip) + sizeof(float));
  CHECK_CUDA(cudaMemcpyAsync(&HostStep->Clip, &DeviceStep->Clip,
                             sizeof(float) + sizeof(uint32_t),
                             cudaMemcpyDeviceToHost, S));
}

void Executor::optimizerStep(uint32_t G, cudaStream_t S,
                             bool OnHost) {
  std::string Error;
  AdamW A = adamwFor(P.Settings, OptimizerStep, Error);
  if (!Error.empty())
    fatalError(Error);
  A.GradScale = rankGradScale();
  auto [Lo, Hi] = L.SubGroupRange[G];
  uint64_t N = Hi - Lo;
  unsigned PB = elementBytes(L.Param), GB = elementBytes(L.GradAccum);
  uint64_t Owned = L.Stage == 0 ? P.Layout.FlatElems : P.Layout.PartitionElems;
  uint32_t Rank = Process.Rank;

  if (OnHost) {
    uint32_t I = CurrentInstruction;
    onHost(S, I, [=] {
      HostState H = hostState(G);
      const char *Grads;
      ElementType GradType;
      if (L.Stage < 3) {
        Grads = host("grads_fp32") + Lo * 4;
        GradType = ElementType::F32;
      } else {
        Grads = host("grads_partition") + Lo * GB;
        GradType = L.GradAccum;
      }
      if (HostStep->Overflow) {
        HostAdamNanos[I] = 0;
        return; // Skipped (fp16); this step's flag, read back by now.
      }
      AdamW Now = A;
      Now.GradScale *= HostStep->Clip;
      HostAdamNanos[I] = nanosToRun([&] {
        hostAdamW(Now, Grads, GradType, H.Master, H.M, H.V, N,
                  Options.HostThreads);
      });
      if (P.Settings.ParamOffload != plan::OffloadDevice::CPU)
        return; // On NVMe: written by the transfer after the step.
      // Parameters live on the host: the update lands there directly
      // (persistent ones go back to the device as a transfer).
      for (const OwnedRange &O : L.Owned) {
        if (O.PartitionOffset < Lo || O.PartitionOffset >= Hi ||
            P.Tensors[O.Tensor].Persistent)
          continue;
        timedConvert(I, host("params16") + L.shardOffset(O.Tensor) * PB,
                     L.Param, H.Master + (O.PartitionOffset - Lo),
                     ElementType::F32, O.End - O.Begin, false);
      }
    });
    (void)Rank;
    return;
  }

  // On the device: gather this sub-group's gradients as fp32, update.
  float *Grad = nullptr;
  char *Params = device("params16");
  if (L.Stage == 0) {
    Grad = reinterpret_cast<float *>(device("grads_fp32"));
    if (!Grad) // fp32 training: the gradients are fp32 already.
      Grad = reinterpret_cast<float *>(device("grads16"));
    else
      launchCopyConvert(Grad, ElementType::F32, device("grads16"), L.Param,
                        N, false, S);
  } else if (L.Stage == 1) {
    Grad = reinterpret_cast<float *>(device("grads_fp32"));
    CHECK_CUDA(cudaMemsetAsync(Grad, 0, N * 4, S));
    uint64_t Real = std::min(L.PartitionEnd, P.Layout.FlatElems);
    if (Real > L.PartitionBegin)
      launchCopyConvert(Grad, ElementType::F32,
                        device("grads16") + L.PartitionBegin * PB, L.Param,
                        Real - L.PartitionBegin, false, S);
  } else if (L.Stage == 2) {
    Grad = reinterpret_cast<float *>(device("grads_fp32"));
    CHECK_CUDA(cudaMemsetAsync(Grad, 0, N * 4, S));
    for (const OwnedRange &O : L.Owned)
      launchCopyConvert(Grad + O.PartitionOffset, ElementType::F32,
                        device("grads16_partition") +
                            (L.gradPartitionOffset(O.Tensor) + O.Begin) * PB,
                        L.Param, O.End - O.Begin, false, S);
  } else {
    Grad = reinterpret_cast<float *>(device("grads_fp32." + std::to_string(G)));
    launchCopyConvert(Grad, ElementType::F32,
                      device("grads_partition") + Lo * GB, L.GradAccum, N,
                      false, S);
  }
  float *Master = reinterpret_cast<float *>(device("master_params"));
  bool MasterIsParams = !Master;
  if (MasterIsParams)
    Master = reinterpret_cast<float *>(Params);
  float *States = reinterpret_cast<float *>(device("optimizer_states"));
  launchAdamW(Master + Lo, States + Lo, States + Owned + Lo, Grad, N, A,
              DeviceStep, S);
  if (MasterIsParams)
    return;
  if (L.Stage < 3) {
    launchCopyConvert(Params + (L.PartitionBegin + Lo) * PB, L.Param,
                      Master + Lo, ElementType::F32, N, false, S);
    return;
  }
  for (const OwnedRange &O : L.Owned) {
    if (O.PartitionOffset < Lo || O.PartitionOffset >= Hi)
      continue;
    const plan::Tensor &X = P.Tensors[O.Tensor];
    char *Dst = X.Persistent
                    ? device("persistent_params") +
                          (L.persistentOffset(O.Tensor) +
                           uint64_t(Rank) * X.ShardElems) *
                              PB
                    : Params + L.shardOffset(O.Tensor) * PB;
    launchCopyConvert(Dst, L.Param, Master + O.PartitionOffset,
                      ElementType::F32, O.End - O.Begin, false, S);
  }
}

} // namespace dsrun
