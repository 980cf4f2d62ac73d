//===- Transfers.cpp - Copies between device, host and NVMe ---------------===//
//
// Offloaded gradients leave through the plan's pinned staging slots, in
// turn, and are converted to the host's fp32 on host threads by the host
// conversion after each copy; updated parameters come back through their
// own staging; stage-3 units come from host shards or from the
// NVMe buffer their read filled (Swap.cpp), in one batch of copies.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "HostMath.h"
#include "dsc/PlanFacts.h"

#include <algorithm>

namespace plan = dsc::plan;

namespace dsrun {

void Executor::copy(const Instr &C, void *Dst, const void *Src,
                    uint64_t Bytes, cudaMemcpyKind Kind) {
  CHECK_CUDA(cudaMemcpyAsync(Dst, Src, Bytes, Kind, C.S));
  Counts.CopiedBytes[C.Index] += Bytes;
}

void Executor::copyBatch(const Instr &C, std::vector<CopyPiece> Pieces) {
  // Pieces that continue each other on both sides are one copy.
  std::vector<CopyPiece> Copies;
  for (const CopyPiece &Piece : Pieces) {
    if (!Piece.Bytes)
      continue;
    if (!Copies.empty()) {
      CopyPiece &Last = Copies.back();
      if (Last.Dst + Last.Bytes == Piece.Dst &&
          Last.Src + Last.Bytes == Piece.Src) {
        Last.Bytes += Piece.Bytes;
        continue;
      }
    }
    Copies.push_back(Piece);
  }
#if CUDART_VERSION >= 13000
  if (Copies.size() > 1) {
    std::vector<void *> Dsts;
    std::vector<const void *> Srcs;
    std::vector<size_t> Sizes;
    for (const CopyPiece &Piece : Copies) {
      Dsts.push_back(Piece.Dst);
      Srcs.push_back(Piece.Src);
      Sizes.push_back(Piece.Bytes);
      Counts.CopiedBytes[C.Index] += Piece.Bytes;
    }
    cudaMemcpyAttributes Attributes = {};
    Attributes.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    size_t First = 0;
    CHECK_CUDA(cudaMemcpyBatchAsync(Dsts.data(), Srcs.data(), Sizes.data(),
                                    Copies.size(), &Attributes, &First, 1,
                                    C.S));
    return;
  }
#endif
  for (const CopyPiece &Piece : Copies)
    copy(C, Piece.Dst, Piece.Src, Piece.Bytes, cudaMemcpyDefault);
}

void Executor::timedConvert(uint32_t Instruction, void *Dst,
                            ElementType DstType, const void *Src,
                            ElementType SrcType, uint64_t Elems,
                            bool Accumulate) {
  Counts.ConvertNanos[Instruction] += nanosToRun([&] {
    convertOnHost(Dst, DstType, Src, SrcType, Elems, Accumulate,
                  Options.HostThreads);
  });
  Counts.ConvertElems[Instruction] += Elems;
}

void Executor::transfer(const Instr &C) {
  const plan::Transfer &X = P.Transfers[C.In.Arg];
  const plan::Placement &Places = P.Places;
  const plan::PartitionViews &O = Places.Owned;
  unsigned PB = elementBytes(ParamType);
  uint32_t Rank = Process.Rank, I = C.Index, Micro = C.In.Micro;
  char *ParamStaging = A.at(Places.Runtime.ParamStaging);
  switch (X.Point) {
  case plan::TransferPoint::AfterReduce: {
    // The copy fills this instruction's staging slot; the host conversion
    // after it (on the host stream) empties the slot its copy filled.
    char *Slot = A.at(Places.InstructionSlots[I]);
    const plan::Bucket &Bucket = P.Buckets[X.Owner];
    const plan::BucketViews &BV = Places.Buckets[X.Owner];
    bool ToHost = X.Kind == plan::TransferKind::DeviceToHost;
    if (Stage < 3) {
      // This rank's piece of the reduced bucket, into its fp32 partition
      // on the host. Stage 1 reduces once, the sum of every micro step;
      // stage 2 every micro step, accumulated here.
      std::vector<CopyPiece> Pieces;
      uint64_t At = 0;
      for (const plan::BucketPiece &Piece : BV.Pieces) {
        if (Piece.Root != Rank)
          continue;
        uint64_t Bytes = A.elems(Piece.View) * PB;
        Pieces.push_back({Slot + At, A.at(Piece.View), Bytes});
        if (!ToHost) // Convert from the slot into the partition.
          Pieces.back() = {A.at(O.GradsFP32, Piece.PartitionOffset),
                           Slot + At, Bytes};
        At += Bytes;
      }
      if (ToHost) {
        T.measureBegin(C);
        for (const CopyPiece &Piece : Pieces)
          copy(C, Piece.Dst, Piece.Src, Piece.Bytes, cudaMemcpyDeviceToHost);
        T.measureEnd(C);
        return;
      }
      bool Accumulate = Stage == 2 && Micro > 0;
      ElementType From = ParamType;
      T.onHost(C, [=] {
        for (const CopyPiece &Piece : Pieces)
          timedConvert(I, Piece.Dst, ElementType::F32, Piece.Src, From,
                       Piece.Bytes / PB, Accumulate);
      });
      return;
    }
    // Stage 3: this rank's chunk, each shard into its place in the host's
    // gradient partition.
    uint32_t Chunk = BV.Chunk;
    ElementType SourceType = ElementType(A.view(Chunk).Type);
    unsigned SB = elementBytes(SourceType);
    if (ToHost) {
      T.measureBegin(C);
      copy(C, Slot, A.at(Chunk), A.elems(Chunk) * SB, cudaMemcpyDeviceToHost);
      T.measureEnd(C);
      return;
    }
    T.onHost(C, [=, &Bucket] {
      for (const plan::Segment &Seg : Bucket.Segments) {
        const plan::TensorViews &V = P.Places.Tensors[Seg.Tensor];
        uint64_t From = A.offset(V.Grad) - A.offset(Chunk);
        timedConvert(I, A.at(O.Grads, V.PartitionOffset), GradAccumType,
                     Slot + From, SourceType, P.Tensors[Seg.Tensor].ShardElems,
                     Micro > 0);
      }
    });
    return;
  }
  case plan::TransferPoint::AfterStep: {
    if (X.Kind == plan::TransferKind::NVMeWrite)
      return swapOut(C, X);
    uint32_t G = X.Owner;
    uint64_t Lo = Places.SubGroups[G].Begin, N = P.Layout.SubGroups[G].Elems;
    bool HostParams = P.Settings.ParamOffload != plan::OffloadDevice::None;
    // The sub-group's updated weights in 16 bits through the staging; with
    // parameters on the host the optimizer wrote those already, and only
    // the persistent ones (kept on the device) go back.
    std::vector<plan::OwnedPiece> Pieces;
    for (const plan::OwnedPiece &Piece : plan::ownedPieces(P, Rank))
      if (Piece.PartitionOffset >= Lo && Piece.PartitionOffset < Lo + N &&
          (!HostParams || P.Tensors[Piece.Tensor].Persistent))
        Pieces.push_back(Piece);
    T.onHost(
        C,
        [=] {
          float *Master = hostState(G).Master;
          if (!HostParams) {
            timedConvert(I, ParamStaging, ParamType, Master, ElementType::F32,
                         N, false);
            return;
          }
          for (const plan::OwnedPiece &Piece : Pieces)
            timedConvert(I, ParamStaging + (Piece.PartitionOffset - Lo) * PB,
                         ParamType, Master + (Piece.PartitionOffset - Lo),
                         ElementType::F32, Piece.End - Piece.Begin, false);
        },
        /*Second=*/true);
    T.measureBegin(C);
    if (Stage < 3) {
      copy(C, A.at(O.Params16, Lo), ParamStaging, N * PB,
           cudaMemcpyHostToDevice);
      T.measureEnd(C);
      return;
    }
    std::vector<CopyPiece> Copies;
    for (const plan::OwnedPiece &Piece : Pieces)
      Copies.push_back({A.at(Places.Tensors[Piece.Tensor].Shard),
                        ParamStaging + (Piece.PartitionOffset - Lo) * PB,
                        (Piece.End - Piece.Begin) * PB});
    copyBatch(C, Copies);
    T.measureEnd(C);
    return;
  }
  case plan::TransferPoint::BeforeGather: {
    if (X.Kind == plan::TransferKind::NVMeRead)
      return swapIn(C, X);
    // Into this rank's chunk of the gather, from the host shards (one
    // piece: they sit unit by unit) or from the buffer the NVMe read
    // filled (a piece per shard: each starts on its own page there).
    std::vector<CopyPiece> Copies;
    for (uint32_t Tn : P.FetchUnits[X.Owner].Tensors) {
      const plan::TensorViews &V = Places.Tensors[Tn];
      const char *From = ParamSwap ? A.at(Places.InstructionSlots[I]) +
                                         Swap->shardInUnit(Tn)
                                   : A.at(V.Shard);
      Copies.push_back(
          {A.at(V.Chunk), From, P.Tensors[Tn].ShardElems * PB});
    }
    T.measureBegin(C);
    copyBatch(C, Copies);
    T.measureEnd(C);
    return;
  }
  case plan::TransferPoint::BeforeStep:
    return swapIn(C, X);
  }
}

} // namespace dsrun
