//===- Pipeline.cpp - The compute passes in order -------------------------===//

#include "dsc/Compute/Passes.h"

using namespace llvm;

namespace dsc::compute {

ArrayRef<ComputePass> computePasses() {
  static const ComputePass Passes[] = {
      {"canonicalize", "drop identities, float casts, inactive dropout",
       canonicalize, false},
      {"fuse-attention", "QK^T, scale, mask, softmax, .V -> dsc.Attention",
       fuseAttention, true},
      {"fuse-rmsnorm", "x * rsqrt(mean(x^2) + eps) * w -> dsc.RMSNorm",
       fuseRMSNorm, true},
      {"fuse-rotary", "x * cos + rotate_half(x) * sin -> dsc.Rotary",
       fuseRotary, true},
      {"fuse-swiglu", "g * sigmoid(g) * u -> dsc.SwiGLU", fuseSwiGLU, true},
      {"fuse-gelu", "tanh and erf GELU decompositions -> Gelu", fuseGelu,
       true},
      {"loss", "append the cross entropy of the logits", appendLoss, false},
      {"autodiff", "the backward program", differentiate, false},
  };
  return Passes;
}

Error runPipeline(Graph &G, const PipelineOptions &Options,
                  const std::function<void(StringRef, const Graph &)> &After,
                  StringRef StopAfter) {
  if (!StopAfter.empty()) {
    bool Known = false;
    for (const ComputePass &P : computePasses())
      Known |= StopAfter == P.Name;
    if (!Known)
      return createStringError(inconvertibleErrorCode(),
                               "no compute pass is named '%s'",
                               StopAfter.str().c_str());
  }
  for (const ComputePass &P : computePasses()) {
    if (P.Fusion &&
        (!Options.Fuse || llvm::is_contained(Options.SkipFusions, P.Name)))
      continue;
    if (Error E = P.Run(G, Options))
      return E;
    if (After)
      After(P.Name, G);
    if (StopAfter == P.Name)
      break;
  }
  return Error::success();
}

} // namespace dsc::compute
