//===- Transfers.cpp - Copies between device, host and NVMe ---------------===//
//
// Offloaded gradients go straight into the host partition where they keep
// their type, or through the plan's pinned staging slots in turn, converted
// (and added) on host threads by the host conversion after each copy;
// updated parameters come back through their own staging; stage-3 units
// come from host shards or from the NVMe buffer their read filled
// (Swap.cpp), in one batch of copies.
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

void Executor::gradientsOut(const Instr &C, const plan::Transfer &X) {
  // A bucket's reduced gradients, this rank's part: straight into the
  // host partition where they keep their type and this micro step starts
  // it; staged, into this instruction's staging slot, which the host
  // conversion after the copy (on the host stream) converts into the
  // partition, adding where this micro step adds to it.
  const plan::PartitionViews &O = P.Places.Owned;
  const plan::Bucket &Bucket = P.Buckets[X.Owner];
  const plan::BucketViews &BV = P.Places.Buckets[X.Owner];
  uint32_t I = C.Index;
  // Device pieces and where they go in the partition.
  struct Piece {
    const char *Device;
    char *Host;
    uint64_t Elems;
  };
  std::vector<Piece> Pieces;
  ElementType From = ParamType, Into = ElementType::F32;
  if (Stage < 3) {
    for (const plan::BucketPiece &BP : BV.Pieces)
      if (BP.Root == uint32_t(Process.Rank))
        Pieces.push_back({Buffers.at(BP.View), Buffers.at(O.GradsFP32, BP.PartitionOffset),
                          Buffers.elems(BP.View)});
  } else {
    // Each shard of this rank's chunk into its place in the partition.
    From = ElementType(Buffers.view(BV.Chunk).Type);
    Into = GradAccumType;
    for (const plan::Segment &Seg : Bucket.Segments) {
      const plan::TensorViews &V = P.Places.Tensors[Seg.Tensor];
      uint64_t At = Buffers.offset(V.Grad) - Buffers.offset(BV.Chunk);
      Pieces.push_back({Buffers.at(BV.Chunk) + At, Buffers.at(O.Grads, V.PartitionOffset),
                        P.Tensors[Seg.Tensor].ShardElems});
    }
  }
  unsigned FB = elementBytes(From);
  // The staging slot holds the pieces side by side.
  char *Slot = X.Staged ? Buffers.at(P.Places.InstructionSlots[I]) : nullptr;
  if (X.Kind == plan::TransferKind::DeviceToHost) {
    std::vector<CopyPiece> Copies;
    uint64_t At = 0;
    for (const Piece &Q : Pieces) {
      Copies.push_back({X.Staged ? Slot + At : Q.Host, Q.Device, Q.Elems * FB});
      At += Q.Elems * FB;
    }
    Timing.measureBegin(C);
    copyBatch(C, Copies);
    Timing.measureEnd(C);
    return;
  }
  bool Add = plan::gradientsAdd(P.Settings, C.In.Micro);
  Timing.onHost(C, [=] {
    uint64_t At = 0;
    for (const Piece &Q : Pieces) {
      timedConvert(I, Q.Host, Into, Slot + At, From, Q.Elems, Add);
      At += Q.Elems * FB;
    }
  });
}

void Executor::transfer(const Instr &C) {
  const plan::Transfer &X = P.Transfers[C.In.Arg];
  const plan::Placement &Places = P.Places;
  const plan::PartitionViews &O = Places.Owned;
  unsigned PB = elementBytes(ParamType);
  uint32_t Rank = Process.Rank, I = C.Index;
  char *ParamStaging = Buffers.at(Places.Runtime.ParamStaging);
  switch (X.Point) {
  case plan::TransferPoint::AfterReduce:
    return gradientsOut(C, X);
  case plan::TransferPoint::AfterStep: {
    if (X.Kind == plan::TransferKind::NVMeWrite)
      return swapOut(C, X);
    uint32_t G = X.Owner;
    uint64_t Lo = Places.SubGroups[G].Begin, N = P.Layout.SubGroups[G].Elems;
    bool HostParams = P.Settings.ParamOffload != plan::OffloadDevice::None;
    // The sub-group's updated weights in 16 bits through the staging, where
    // the host AdamW wrote them in its pass; with parameters on the host
    // (or NVMe) the shards are updated there, and only the persistent ones
    // (kept on the device) are converted here and go back.
    std::vector<plan::OwnedPiece> Pieces;
    for (const plan::OwnedPiece &Piece : plan::ownedPieces(P, Rank))
      if (Piece.PartitionOffset >= Lo && Piece.PartitionOffset < Lo + N &&
          (!HostParams || P.Tensors[Piece.Tensor].Persistent))
        Pieces.push_back(Piece);
    if (HostParams)
      Timing.onHost(
          C,
          [=] {
            float *Master = hostState(G).Master;
            for (const plan::OwnedPiece &Piece : Pieces)
              timedConvert(I, ParamStaging + (Piece.PartitionOffset - Lo) * PB,
                           ParamType, Master + (Piece.PartitionOffset - Lo),
                           ElementType::F32, Piece.End - Piece.Begin, false);
          });
    Timing.measureBegin(C);
    if (Stage < 3) {
      copy(C, Buffers.at(O.Params16, Lo), ParamStaging, N * PB,
           cudaMemcpyHostToDevice);
      Timing.measureEnd(C);
      return;
    }
    std::vector<CopyPiece> Copies;
    for (const plan::OwnedPiece &Piece : Pieces)
      Copies.push_back({Buffers.at(Places.Tensors[Piece.Tensor].Shard),
                        ParamStaging + (Piece.PartitionOffset - Lo) * PB,
                        (Piece.End - Piece.Begin) * PB});
    copyBatch(C, Copies);
    Timing.measureEnd(C);
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
      const char *From = ParamSwap ? Buffers.at(Places.InstructionSlots[I]) +
                                         Swap->shardInUnit(Tn)
                                   : Buffers.at(V.Shard);
      Copies.push_back(
          {Buffers.at(V.Chunk), From, P.Tensors[Tn].ShardElems * PB});
    }
    Timing.measureBegin(C);
    copyBatch(C, Copies);
    Timing.measureEnd(C);
    return;
  }
  case plan::TransferPoint::BeforeStep:
    return swapIn(C, X);
  }
}

} // namespace dsrun
