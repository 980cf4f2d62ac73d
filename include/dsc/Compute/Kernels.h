//===- Kernels.h - From the compute IR to the kernels dsrun runs -*- C++ -*-===//
//
// Every node becomes zero or more kernels of the closed set dsrun
// implements (plan::KernelKind). Views (Reshape, Transpose, Slice, Expand,
// Split, ...) cost no kernel: they become strided operands of the kernels
// that read them, and a copy is made only where a kernel needs a layout a
// view cannot give (a Gemm operand whose batch dims do not collapse, a
// norm's rows). Every value gets storage of its own or a view of another
// value's, and a type: activations and gradients in the training dtype,
// statistics (norm rstd, attention and loss log-sum-exp, the loss) in
// fp32.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_COMPUTE_KERNELS_H
#define DSC_COMPUTE_KERNELS_H

#include "dsc/Compute/Graph.h"
#include "dsc/PlanFormat.h"

#include <functional>
#include <optional>

namespace dsc::compute {

struct KernelOptions {
  /// The type activations, gradients and parameters compute in.
  DType Activation = DType::F32;
  /// The plan tensor of a parameter (by its name); NoIndex if none, and
  /// for every parameter when not given.
  std::function<uint32_t(const ParamInfo &)> TensorOf;
  /// The attention algorithms to try for each attention kernel, in order;
  /// the first that runs it is its algorithm (math runs every one).
  std::vector<plan::AttentionAlgorithm> AttentionOrder = {
      plan::AttentionAlgorithm::Flash};
  /// Kernels write straight into the destination of a copy whose source
  /// exists only to be copied (elideCopies).
  bool ElideCopies = true;
  /// Residual adds folded into the norms (fuseResidualNorms); the forward
  /// half is off where layers are recomputed, since a norm would then
  /// recompute its layer's input from values already dropped.
  bool FuseResidualNorms = true;
  bool CheckpointLayers = false;
  /// Each pointwise kernel whose result one later pointwise kernel alone
  /// reads is inlined into it (fusePointwiseChains); forward kernels
  /// only where layers are not recomputed, as for the norms.
  bool FusePointwise = true;
  /// Products whose outputs one backward kernel only sums add into the
  /// sum instead (accumulateProducts).
  bool AccumulateProducts = true;
};

/// The kernel program in plan form. Kernels are in program order, each
/// with the graph node it computes (Kernel::Op holds that node's index
/// until the planner assigns ops).
struct KernelProgram {
  std::vector<plan::Value> Values;
  std::vector<plan::Kernel> Kernels;
  std::vector<plan::Constant> Constants;
  plan::Compute Training;
  /// Per kernel: the node of the graph it comes from.
  std::vector<uint32_t> Node;
  /// Per graph value: the plan value holding it (NoIndex: none).
  std::vector<uint32_t> ValueOf;
};

llvm::Expected<KernelProgram> selectKernels(const Graph &G,
                                            const KernelOptions &Options);

/// Removes each plain copy whose source value is only written and read
/// by kernels that take any view (pointwise, fill, flash attention): they
/// address the copy's destination instead, and the source value goes.
/// Safe where no other kernel touches the destination's copied elements
/// while the source lives. Returns how many copies went.
unsigned elideCopies(KernelProgram &P);

/// Folds each residual add into the norm that reads its sum (Forward; the
/// norm then stores the sum too: Residual) and each add of a norm's input
/// gradient to the stream's gradient into the norm's gradient (a last
/// input; Residual). Returns how many adds went.
unsigned fuseResidualNorms(KernelProgram &P, bool Forward);

/// Inlines each pointwise kernel into the one later pointwise kernel that
/// reads its result, element for element (backward kernels only unless
/// Forward), where the fused program still fits a kernel. Returns how
/// many kernels went.
unsigned fusePointwiseChains(KernelProgram &P, bool Forward);

/// Lets backward products whose outputs one pointwise kernel only sums
/// store into the sum's value, the first storing and each later one
/// adding (beta 1), and drops the sum. Returns how many sums went.
unsigned accumulateProducts(KernelProgram &P);

/// Removes the kernels marked Gone and the values marked Dropped (no
/// kernel may still name them), renumbering the values everywhere.
void dropKernelsAndValues(KernelProgram &P, const std::vector<bool> &Gone,
                          const std::vector<bool> &Dropped);

/// A view V of a value of Elems elements, seen through a copy that reads
/// the whole value once (through In) and writes it through Out: the same
/// elements as a view of Out's value, or nullopt when strides cannot say
/// it.
std::optional<plan::TensorRef> viewThroughCopy(const plan::TensorRef &V,
                                               const plan::TensorRef &In,
                                               const plan::TensorRef &Out,
                                               uint64_t Elems);

/// Whether two views may share an element: exact for views of one value
/// with equal strides laid out without interleaving, true (unknown) for
/// other views of one value.
bool mayOverlap(const plan::TensorRef &A, const plan::TensorRef &B);

} // namespace dsc::compute

#endif
