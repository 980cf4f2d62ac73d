//===- Kernels.h - The device work dsrun launches ---------------*- C++ -*-===//

#ifndef DSRUN_KERNELS_H
#define DSRUN_KERNELS_H

#include "Synthetic.h"
#include "dsc/PlanFacts.h"

#include <cuda_runtime.h>

namespace dsrun {

/// Dst[i] (+)= the synthetic gradient of element ElemBase + i of Tensor,
/// for i < N, at the step Now holds; zero from RealN on (padding).
void launchFillGrad(void *Dst, ElementType T, uint64_t N, uint64_t RealN,
                    uint32_t Rank, const StepValues *Now, uint32_t Micro,
                    uint32_t Tensor, uint64_t ElemBase, bool Accumulate,
                    cudaStream_t S);

/// Dst[i] (+)= Src[i], converting between element types.
void launchCopyConvert(void *Dst, ElementType DstT, const void *Src,
                       ElementType SrcT, uint64_t N, bool Accumulate,
                       cudaStream_t S);

/// Copies a gradient of RealN elements, padded to Shard x World, into the
/// rank-major chunks of a stage-3 bucket: element i goes to chunk i/Shard
/// at ChunkOffset + i%Shard.
void launchScatterToChunks(void *Bucket, ElementType BucketT, const void *Grad,
                           ElementType GradT, uint64_t RealN, uint64_t Shard,
                           uint32_t World, uint64_t ChunkElems,
                           uint64_t ChunkOffset, cudaStream_t S);

/// Up to eight tensors of a stage-3 unit gathered rank-major, in elements:
/// where each goes in the unit, where its shard sits in a rank's chunk,
/// and the shard's size.
struct UnpackTable {
  static constexpr unsigned Capacity = 8;
  unsigned Count = 0;
  uint64_t UnitOffset[Capacity], ChunkOffset[Capacity], Shard[Capacity];
};

/// The inverse for a unit: each tensor of Shard x World elements, whose
/// shard r sits in chunk r (of ChunkElems) at its ChunkOffset, put whole at
/// its UnitOffset. One launch for every tensor in the table.
void launchUnpackUnit(void *Unit, const void *Chunks, unsigned ElementBytes,
                      const UnpackTable &Elems, uint32_t World,
                      uint64_t ChunkElems, cudaStream_t S);

/// ZeRO++ qwZ (Quantize.h): N values of type T, in Groups equal groups,
/// into N int8 bytes and a kept scale per group.
void launchQuantizeInt8(void *Out, void *Kept, const void *In, ElementType T,
                        uint64_t N, uint64_t Groups, cudaStream_t S);
/// And back: N bytes (a multiple of 8), a kept scale per GroupSize (a
/// multiple of 8), stored as T.
void launchDequantizeInt8(void *Out, ElementType T, const void *In,
                          const void *Kept, uint64_t N, uint64_t GroupSize,
                          cudaStream_t S);

/// ZeRO++ qgZ (Quantize.h): one fp16 gradient's place in its bucket's
/// exchange (plan::QgzLayout). A partition is its elements / world, in
/// Groups groups of GroupSize; Block1, Block2: bytes of a block sent
/// within the node and across nodes; Data: the tensor's first byte in a
/// block; ScalesAt: where a block's scales start (bytes); Scales: the
/// tensor's first scale among them.
struct QgzShape {
  uint64_t PartElems = 0, GroupSize = 0, Groups = 0;
  uint32_t Nodes = 1, PerNode = 1;
  uint64_t Block1 = 0, Data1 = 0, ScalesAt1 = 0, Scales1 = 0;
  uint64_t Block2 = 0, Data2 = 0, ScalesAt2 = 0, Scales2 = 0;
};
/// The shape of Piece, a quantized gradient of layout L, under Settings.
inline QgzShape qgzShape(const dsc::plan::Info &S,
                         const dsc::plan::QgzLayout &L,
                         const dsc::plan::QgzLayout::Piece &Pc,
                         const dsc::plan::Tensor &T) {
  QgzShape Q;
  Q.PartElems = T.Elems / S.WorldSize;
  Q.GroupSize = Pc.Q.GroupSize;
  Q.Groups = Pc.Q.Groups;
  Q.Nodes = S.Nodes;
  Q.PerNode = S.GpusPerNode;
  Q.Block1 = L.Block1, Q.Data1 = Pc.Data1, Q.ScalesAt1 = L.ScalesAt1,
  Q.Scales1 = Pc.Scales1;
  Q.Block2 = L.Block2, Q.Data2 = Pc.Data2, Q.ScalesAt2 = L.ScalesAt2,
  Q.Scales2 = Pc.Scales2;
  return Q;
}
/// Every partition of the gradient (Whole, fp16) quantized into Send1:
/// partition m x PerNode + l into block l, after those of nodes before m.
void launchQgzQuantize(void *Send1, const void *Whole, const QgzShape &Q,
                       cudaStream_t S);
/// What the node's ranks sent (Recv1, a block each) summed partition by
/// partition and requantized into Send2 (node m's partition into block m).
void launchQgzSum(void *Send2, const void *Recv1, const QgzShape &Q,
                  cudaStream_t S);
/// What the nodes sent (Recv2, a block each) summed, times Factor, into
/// this rank's partition (Part, fp16).
void launchQgzFinish(void *Part, const void *Recv2, const QgzShape &Q,
                     float Factor, cudaStream_t S);

/// One AdamW step over N elements of master weights and moments held as
/// StateT (fp32, or bf16 where A.BF16State), with the bias corrections of
/// the step Now holds. The gradient is read as GradT (float, or 16-bit
/// converted as it is read), zero from element RealGrad on; where Params
/// is given, each updated weight is stored there too, as ParamT: one pass,
/// where three (convert the gradient, update, convert the weights) would
/// each stream the arrays again.
void launchAdamW(void *Master, void *M, void *V, ElementType StateT,
                 const void *Grad, ElementType GradT, uint64_t RealGrad,
                 uint64_t N, void *Params, ElementType ParamT, const AdamW &A,
                 const StepValues *Now, cudaStream_t S);

/// Adds the squares of X's N elements into Partials, one sum per block
/// (Blocks of them), in a fixed order.
void launchSumSquares(const void *X, ElementType T, uint64_t N,
                      float *Partials, unsigned Blocks, cudaStream_t S);
/// Out = the sum of the partials, which go back to zero.
void launchSumPartials(float *Partials, unsigned Blocks, float *Out,
                       cudaStream_t S);
/// From the sum of squares of the reduced gradients: the norm of the
/// gradient the optimizer sees (Scale: 1 / world size), unscaled by the
/// step's loss scale, replaces the sum; Now->Clip becomes the factor
/// MaxNorm / (norm + 1e-6) when that is below 1, else 1 (torch's
/// clip_grad_norm_, DeepSpeed's clip; MaxNorm 0: no clipping), over the
/// loss scale; Now->Overflow says whether the norm is inf or NaN.
void launchClipFactor(float *SumOfSquares, float Scale, float MaxNorm,
                      StepValues *Now, cudaStream_t S);

/// The initial weights of elements [ElemBase, ElemBase + N) of Tensor:
/// Params in type T when given and, when Master is given, the fp32 master
/// copy (the weight rounded through T).
void launchInitWeights(void *Params, ElementType T, float *Master,
                       uint32_t Tensor, uint64_t ElemBase, uint64_t N,
                       uint64_t RealN, cudaStream_t S);

/// Reads and writes Bytes of Buffer: the memory traffic of an op that
/// computes no matrix product.
void launchTouch(void *Buffer, uint64_t Bytes, cudaStream_t S);

} // namespace dsrun

#endif
