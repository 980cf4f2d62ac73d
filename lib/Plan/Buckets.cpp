//===- Buckets.cpp - Gradient reduction buckets ---------------------------===//
//
// Gradients become ready in backward order: a parameter's gradient is
// complete when backward reaches its first use. DeepSpeed copies each
// ready gradient into the reduction (IPG) bucket and reduces the bucket
// when the next gradient would overflow reduce_bucket_size; a gradient
// larger than the bucket is reduced on its own, from its own storage.
// Stage 0/1 all-reduce (stage 1 only at the accumulation boundary);
// stage 2/3 reduce-scatter every micro step.
//
//===----------------------------------------------------------------------===//

#include "PlanInternal.h"

#include "dsc/PlanFacts.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace dsc {

/// Trainable tensors in the order backward completes their gradients.
static std::vector<uint32_t> gradientReadyOrder(const plan::Plan &P) {
  std::vector<uint32_t> Order = P.Layout.Order;
  // Unused parameters get no gradient from backward; they go last.
  auto Key = [&](uint32_t T) {
    uint32_t U = P.Tensors[T].FirstUse;
    return U == plan::NoIndex ? int64_t(-1) : int64_t(U);
  };
  llvm::stable_sort(Order, [&](uint32_t A, uint32_t B) {
    if (Key(A) != Key(B))
      return Key(A) > Key(B);
    return A > B;
  });
  return Order;
}

Error runBucketPass(plan::Plan &P) {
  const plan::Info &S = P.Settings;
  P.Buckets.clear();
  // ZeRO++ qgZ across nodes: each quantized gradient must fit what
  // DeepSpeed's kernels assume, or its reduction fails or sends garbage.
  for (const plan::Tensor &T : P.Tensors)
    if (plan::qgzAcrossNodes(S) && T.Role == plan::TensorRole::Trainable)
      if (std::string Why = plan::qgzMisfit(S, plan::qgzTensor(S, T));
          !Why.empty())
        return planError(formatv(
            "zero_optimization.zero_quantized_gradients across nodes: the "
            "gradient of '{0}' ({1} elements): {2}, where DeepSpeed's "
            "quantized reduction fails or sends memory it never wrote; drop "
            "qgZ or change the shape",
            T.Name, T.Elems, Why));
  plan::Collective Kind = S.ZeroStage >= 2 ? plan::Collective::ReduceScatter
                                           : plan::Collective::AllReduce;
  plan::Bucket Open;
  auto Close = [&] {
    if (Open.Segments.empty())
      return;
    P.Buckets.push_back(std::move(Open));
    Open = plan::Bucket();
  };
  // Gradients one op completes together (a linear layer's weight and
  // bias) go to the same bucket: the op writes them in one instruction,
  // so a bucket boundary between them would overwrite a shared bucket
  // buffer before its reduction has read it. A bucket may then exceed
  // the size by the rest of one op's gradients.
  std::vector<uint32_t> Ready = gradientReadyOrder(P);
  for (size_t I = 0; I < Ready.size();) {
    size_t End = I + 1;
    while (End < Ready.size() &&
           P.Tensors[Ready[End]].FirstUse == P.Tensors[Ready[I]].FirstUse &&
           P.Tensors[Ready[I]].FirstUse != plan::NoIndex)
      ++End;
    uint64_t Group = 0;
    for (size_t K = I; K < End; ++K)
      Group += P.Tensors[Ready[K]].Elems;
    // Parameters no op uses come last in both the flat order and this one:
    // a bucket of their own keeps every bucket one range of the flat
    // buffer (the first used parameters lie at its other end).
    bool Unused = P.Tensors[Ready[I]].FirstUse == plan::NoIndex;
    bool OpenUsed = !Open.Segments.empty() &&
                    P.Tensors[Open.Segments.back().Tensor].FirstUse !=
                        plan::NoIndex;
    if ((Open.Elems > 0 && Open.Elems + Group > S.ReduceBucketElems) ||
        (Unused && OpenUsed))
      Close();
    for (size_t K = I; K < End; ++K) {
      uint32_t T = Ready[K];
      Open.Kind = Kind;
      Open.Type = S.CommDType;
      Open.Segments.push_back({T, 0, P.Tensors[T].Elems});
      Open.Elems += P.Tensors[T].Elems;
    }
    // One gradient larger than the bucket reduces alone, in place.
    if (End - I == 1 && Group > S.ReduceBucketElems)
      Open.InPlace = true;
    if (Open.Elems >= S.ReduceBucketElems)
      Close();
    I = End;
  }
  Close();
  // Two buffers under overlap_comm (plan::bucketBuffers says why). Stage 0
  // flattens each bucket into a temporary.
  unsigned Buffers = plan::bucketBuffers(S);
  uint32_t Next = 0;
  if (S.ZeroStage > 0 && S.ContiguousGradients)
    for (plan::Bucket &B : P.Buckets)
      if (!B.InPlace)
        B.BufferIndex = Next++ % Buffers;
  return Error::success();
}

} // namespace dsc
