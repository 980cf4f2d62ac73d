//===- Transfers.cpp - Copies between device, host and NVMe ---------------===//
//
// Offloaded gradients leave through a pinned staging buffer and are
// converted to the host's fp32 on host threads; updated parameters come
// back the same way; stage-3 units come from host shards or from the NVMe
// buffer their read filled (Swap.cpp), in one batch of copies.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "HostMath.h"

#include <algorithm>

namespace plan = dsc::plan;

namespace dsrun {

void Executor::copy(void *Dst, const void *Src, uint64_t Bytes,
                    cudaMemcpyKind Kind, cudaStream_t S) {
  CHECK_CUDA(cudaMemcpyAsync(Dst, Src, Bytes, Kind, S));
  CopiesIssued[CurrentInstruction] += Bytes;
}

void Executor::copyBatch(std::vector<CopyPiece> Pieces, cudaStream_t S) {
  // Pieces that continue each other on both sides are one copy.
  std::vector<CopyPiece> Copies;
  for (const CopyPiece &C : Pieces) {
    if (!C.Bytes)
      continue;
    if (!Copies.empty()) {
      CopyPiece &Last = Copies.back();
      if (Last.Dst + Last.Bytes == C.Dst && Last.Src + Last.Bytes == C.Src) {
        Last.Bytes += C.Bytes;
        continue;
      }
    }
    Copies.push_back(C);
  }
#if CUDART_VERSION >= 13000
  if (Copies.size() > 1) {
    std::vector<void *> Dsts;
    std::vector<const void *> Srcs;
    std::vector<size_t> Sizes;
    for (const CopyPiece &C : Copies) {
      Dsts.push_back(C.Dst);
      Srcs.push_back(C.Src);
      Sizes.push_back(C.Bytes);
      CopiesIssued[CurrentInstruction] += C.Bytes;
    }
    cudaMemcpyAttributes Attributes = {};
    Attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t First = 0;
    CHECK_CUDA(cudaMemcpyBatchAsync(Dsts.data(), Srcs.data(), Sizes.data(),
                                    Copies.size(), &Attributes, &First, 1, S));
    return;
  }
#endif
  for (const CopyPiece &C : Copies)
    copy(C.Dst, C.Src, C.Bytes, cudaMemcpyDefault, S);
}

void Executor::timedConvert(uint32_t Instruction, void *Dst,
                            ElementType DstType, const void *Src,
                            ElementType SrcType, uint64_t Elems,
                            bool Accumulate) {
  ConvertNanos[Instruction] += nanosToRun([&] {
    convertOnHost(Dst, DstType, Src, SrcType, Elems, Accumulate,
                  Options.HostThreads);
  });
  ConvertElems[Instruction] += Elems;
}

void Executor::transfer(uint32_t Index, uint32_t Micro, cudaStream_t S) {
  const plan::Transfer &X = P.Transfers[Index];
  unsigned PB = elementBytes(L.Param), GB = elementBytes(L.GradAccum);
  uint32_t Rank = Process.Rank;
  uint32_t I = CurrentInstruction;
  uint32_t Slot = uint32_t(P.Program.size()) + I;
  switch (X.Point) {
  case plan::TransferPoint::AfterReduce: {
    const plan::Bucket &Bucket = P.Buckets[X.Owner];
    const BucketLayout &BL = L.Buckets[X.Owner];
    char *Source = DeviceArena + BL.SourceOffset;
    if (L.Stage < 3) {
      uint64_t Lo = std::max(BL.FlatBegin, L.PartitionBegin);
      uint64_t Hi = std::min(BL.FlatEnd, L.PartitionEnd);
      if (Lo >= Hi)
        return;
      measureBegin(S);
      copy(GradStaging, Source + (Lo - BL.SourceOrigin) * PB, (Hi - Lo) * PB,
           cudaMemcpyDeviceToHost, S);
      measureEnd(S);
      // Stage 1 reduces once, the sum of every micro step; stage 2 every
      // micro step, accumulated here.
      bool Accumulate = L.Stage == 2 && Micro > 0;
      uint64_t Begin = L.PartitionBegin;
      onHost(S, Slot, [=] {
        timedConvert(I, host("grads_fp32") + (Lo - Begin) * 4,
                     ElementType::F32, GradStaging, L.Param, Hi - Lo,
                     Accumulate);
      });
      return;
    }
    uint64_t Chunk = BL.ChunkElems;
    ElementType SourceType = BL.SourceType;
    unsigned SB = elementBytes(SourceType);
    measureBegin(S);
    copy(GradStaging, Source + uint64_t(Rank) * Chunk * SB, Chunk * SB,
         cudaMemcpyDeviceToHost, S);
    measureEnd(S);
    onHost(S, Slot, [=, &Bucket, &BL] {
      for (size_t K = 0; K < Bucket.Segments.size(); ++K) {
        uint32_t T = Bucket.Segments[K].Tensor;
        uint64_t From = BL.ChunkOffset[K];
        timedConvert(I, host("grads_partition") + L.orderOffset(T) * GB,
                     L.GradAccum, GradStaging + From * SB, SourceType,
                     P.Tensors[T].ShardElems, Micro > 0);
      }
    });
    return;
  }
  case plan::TransferPoint::AfterStep: {
    if (X.Kind == plan::TransferKind::NVMeWrite)
      return swapOut(X, S);
    auto [Lo, Hi] = L.SubGroupRange[X.Owner];
    uint32_t G = X.Owner;
    bool HostParams = P.Settings.ParamOffload != plan::OffloadDevice::None;
    onHost(S, Slot, [=] {
      float *Master = hostState(G).Master;
      if (!HostParams) {
        timedConvert(I, ParamStaging, L.Param, Master, ElementType::F32,
                     Hi - Lo, false);
        return;
      }
      // The others were written on the host by the optimizer step: only
      // the persistent shards go back, so only they are converted.
      for (const OwnedRange &O : L.Owned)
        if (O.PartitionOffset >= Lo && O.PartitionOffset < Hi &&
            P.Tensors[O.Tensor].Persistent)
          timedConvert(I, ParamStaging + (O.PartitionOffset - Lo) * PB,
                       L.Param, Master + (O.PartitionOffset - Lo),
                       ElementType::F32, O.End - O.Begin, false);
    });
    char *Params = device("params16");
    measureBegin(S);
    if (L.Stage < 3) {
      copy(Params + (L.PartitionBegin + Lo) * PB, ParamStaging,
           (Hi - Lo) * PB, cudaMemcpyHostToDevice, S);
      measureEnd(S);
      return;
    }
    std::vector<CopyPiece> Pieces;
    for (const OwnedRange &O : L.Owned) {
      if (O.PartitionOffset < Lo || O.PartitionOffset >= Hi)
        continue;
      const plan::Tensor &T = P.Tensors[O.Tensor];
      if (HostParams && !T.Persistent)
        continue; // Updated in place on the host.
      char *Dst = T.Persistent
                      ? device("persistent_params") +
                            (L.persistentOffset(O.Tensor) +
                             uint64_t(Rank) * T.ShardElems) *
                                PB
                      : Params + L.shardOffset(O.Tensor) * PB;
      Pieces.push_back({Dst, ParamStaging + (O.PartitionOffset - Lo) * PB,
                        (O.End - O.Begin) * PB});
    }
    copyBatch(Pieces, S);
    measureEnd(S);
    return;
  }
  case plan::TransferPoint::BeforeGather: {
    if (X.Kind == plan::TransferKind::NVMeRead)
      return swapIn(X, S);
    // Into this rank's chunk of the gather, from the host shards (one
    // piece: they sit unit by unit) or from the buffer the NVMe read
    // filled (a piece per shard: each starts on its own page there).
    uint32_t U = X.Owner;
    char *Chunk = device(L.gatherTarget(U)) +
                  uint64_t(Rank) * L.chunkElems(U) * PB;
    std::vector<CopyPiece> Pieces;
    for (uint32_t T : P.FetchUnits[U].Tensors) {
      const char *From = ParamSwap
                             ? paramSwapBuffer() + Swap->shardInUnit(T)
                             : host("params16") + L.shardOffset(T) * PB;
      Pieces.push_back({Chunk + L.chunkOffset(U, T) * PB, From,
                        P.Tensors[T].ShardElems * PB});
    }
    measureBegin(S);
    copyBatch(Pieces, S);
    measureEnd(S);
    return;
  }
  case plan::TransferPoint::BeforeStep:
    return swapIn(X, S);
  }
}

} // namespace dsrun
