//===- Lowering.h - An op's lowering to the plan's kernels ------*- C++ -*-===//
//
// Each operator (OpDef) names the function that lowers one of its nodes to
// kernels (OpDef::Lower); kernel selection (Kernels.cpp) walks the graph
// and calls it with a KernelBuilder, which gives the node's values
// storage and views and takes the kernels. A new kernel kind is lowered
// here, from the ops that make it, beside its entry in the kernel registry
// (dsc/KernelRegistry.h) and its launch in dsrun (runtime/src/
// KernelLaunch.cu).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_COMPUTE_LOWERING_H
#define DSC_COMPUTE_LOWERING_H

#include "dsc/Compute/Graph.h"
#include "dsc/Compute/Kernels.h"
#include "dsc/Compute/Ops.h"
#include "dsc/PlanFormat.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace dsc::compute {

/// What a lowering may ask of kernel selection.
class KernelBuilder {
public:
  virtual ~KernelBuilder() = default;
  virtual const Graph &graph() const = 0;
  virtual const KernelOptions &options() const = 0;
  /// The plan values made so far (types and sizes of the operands).
  virtual const std::vector<plan::Value> &values() const = 0;

  /// Value V as an operand: as stored; laid out as dense rows (a copy
  /// where it is not; Padded: rows may start further apart than their
  /// length); broadcast to shape Out; a dense copy of it.
  virtual plan::TensorRef ref(ValueId V) = 0;
  virtual plan::TensorRef rowsRef(ValueId V, bool Padded = false) = 0;
  virtual plan::TensorRef broadcastRef(ValueId V, const Shape &Out) = 0;
  virtual plan::TensorRef contiguousRef(ValueId V) = 0;
  /// Gives V, an output of the node, storage of its own (PadRows: rows of
  /// a width cuBLAS cannot align start at multiples of 8) and returns it
  /// as an operand.
  virtual plan::TensorRef output(ValueId V, bool PadRows = false) = 0;
  /// Adds a kernel of the node being lowered.
  virtual void emit(plan::Kernel K) = 0;
  /// The loss the program computes.
  virtual void setLoss(plan::LossKind Loss) = 0;

  /// The lowerings that share selection's own state: views (strides, no
  /// kernel), elementwise nodes (one pointwise kernel), products (with
  /// the epilogues they absorb from the nodes around them).
  virtual llvm::Error view(const Node &N) = 0;
  virtual llvm::Error pointwise(const Node &N) = 0;
  virtual llvm::Error product(const Node &N) = 0;
};

// The lowering of each op family (Lowering.cpp), named in the op tables.
llvm::Error lowerView(KernelBuilder &B, const Node &N);
llvm::Error lowerPointwise(KernelBuilder &B, const Node &N);
llvm::Error lowerMatMul(KernelBuilder &B, const Node &N);
llvm::Error lowerReduce(KernelBuilder &B, const Node &N);
llvm::Error lowerSoftmax(KernelBuilder &B, const Node &N);
llvm::Error lowerSoftmaxGrad(KernelBuilder &B, const Node &N);
llvm::Error lowerNorm(KernelBuilder &B, const Node &N);
llvm::Error lowerNormGrad(KernelBuilder &B, const Node &N);
llvm::Error lowerRotary(KernelBuilder &B, const Node &N);
llvm::Error lowerSwiGLU(KernelBuilder &B, const Node &N);
llvm::Error lowerAttention(KernelBuilder &B, const Node &N);
llvm::Error lowerGather(KernelBuilder &B, const Node &N);
llvm::Error lowerCrossEntropy(KernelBuilder &B, const Node &N);
llvm::Error lowerConcat(KernelBuilder &B, const Node &N);
llvm::Error lowerSliceGrad(KernelBuilder &B, const Node &N);

/// The program that copies register 0 to the output.
plan::PointwiseAttrs copyProgram();

} // namespace dsc::compute

#endif
