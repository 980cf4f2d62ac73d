//===- Passes.h - The passes from an imported graph to a training step -*- C++ -*-===//
//
//   canonicalize     identities, inference-only dropout, casts between
//                    float types, NaN guards after softmax
//   fuse-attention   QK^T, scale, mask, softmax, .V -> dsc.Attention
//   fuse-rmsnorm     x * rsqrt(mean(x^2) + eps) * w -> dsc.RMSNorm
//   fuse-rotary      x * cos + rotate_half(x) * sin -> dsc.Rotary
//   fuse-swiglu      g * sigmoid(g) * u -> dsc.SwiGLU
//   fuse-gelu        the tanh and erf decompositions -> Gelu
//   loss             dsc.CrossEntropy of the logits and the targets
//   autodiff         the backward program, one rule per operator
//
// Each pass is named, and dsc lower --print-after=NAME prints the graph
// after it (docs/compute.md).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_COMPUTE_PASSES_H
#define DSC_COMPUTE_PASSES_H

#include "dsc/Compute/Graph.h"

#include "llvm/ADT/ArrayRef.h"

#include <functional>

namespace dsc::compute {

using LossKind = plan::LossKind;
llvm::StringRef lossName(LossKind K);
std::optional<LossKind> lossNamed(llvm::StringRef Name);

struct PipelineOptions {
  LossKind Loss = LossKind::CausalLM;
  /// Targets equal to this are left out of the mean (HF's -100).
  int64_t IgnoreIndex = -100;
  /// The gradient the loss starts backward with: 1 / the micro steps of
  /// an optimizer step, as DeepSpeed scales the loss.
  double LossGradScale = 1.0;
  /// Run the fusion passes (off: the unfused graph, for gradient checks).
  bool Fuse = true;
  /// Fusion passes left out by name (dsc plan --skip-fusion, to compare a
  /// fusion's kernels with the chain it replaces).
  std::vector<std::string> SkipFusions;
};

struct ComputePass {
  const char *Name;
  const char *Summary;
  llvm::Error (*Run)(Graph &, const PipelineOptions &);
  bool Fusion;
};

/// The passes in the order they run.
llvm::ArrayRef<ComputePass> computePasses();

/// Runs every pass (fusions only with Options.Fuse) up to and including
/// StopAfter when given; After is called after each with its name.
llvm::Error
runPipeline(Graph &G, const PipelineOptions &Options,
            const std::function<void(llvm::StringRef, const Graph &)> &After =
                nullptr,
            llvm::StringRef StopAfter = "");

llvm::Error canonicalize(Graph &G, const PipelineOptions &);
llvm::Error fuseAttention(Graph &G, const PipelineOptions &);
llvm::Error fuseRMSNorm(Graph &G, const PipelineOptions &);
llvm::Error fuseRotary(Graph &G, const PipelineOptions &);
llvm::Error fuseSwiGLU(Graph &G, const PipelineOptions &);
llvm::Error fuseGelu(Graph &G, const PipelineOptions &);
llvm::Error appendLoss(Graph &G, const PipelineOptions &);
llvm::Error differentiate(Graph &G, const PipelineOptions &);

} // namespace dsc::compute

#endif
