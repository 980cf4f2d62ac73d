//===- Ops.h - The operator registry: every op defined once -----*- C++ -*-===//
//
// Per operator type, in one table: its shape inference, its evaluation on
// the host (which constant folding and the reference interpreter both
// use), its gradient rule, and what it costs. The config side has one
// schema table; the compute side has this. An operator missing from it,
// or missing the part a model needs (a gradient for a value that needs
// one), is an error that names the node, its op type and its module.
//
// The families live in lib/Compute/Ops*.cpp: elementwise, shape and view
// ops, linear algebra and reductions, and the fused neural-network ops
// (norms, attention, embedding, the loss).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_COMPUTE_OPS_H
#define DSC_COMPUTE_OPS_H

#include "dsc/Compute/Graph.h"

namespace dsc::compute {

struct InferContext {
  Graph &G;
  Node &N;

  bool has(unsigned I) const {
    return I < N.Inputs.size() && N.Inputs[I] != NoValue;
  }
  const Value &in(unsigned I) const { return G.Values[N.Inputs[I]]; }
  const Shape &shape(unsigned I) const { return in(I).Dims; }
  /// A constant input's elements, or null when it is not known.
  const HostTensor *constant(unsigned I) const {
    return has(I) && in(I).known() ? in(I).Data.get() : nullptr;
  }
  /// A known integer input (a shape, axes); an error names the input when
  /// it is computed at run time.
  llvm::Expected<std::vector<int64_t>> ints(unsigned I,
                                            llvm::StringRef What) const;
  void out(unsigned I, Shape S, DType T) {
    Value &V = G.Values[N.Outputs[I]];
    V.Dims = std::move(S);
    V.Type = T;
  }
  llvm::Error error(const llvm::Twine &Message) const {
    return G.nodeError(N, Message);
  }
};

struct EvalContext {
  const Graph &G;
  const Node &N;
  /// Null for an omitted optional input.
  std::vector<const HostTensor *> In;
  /// Sized to the node's outputs; the rule fills each.
  std::vector<HostTensor> Out;
  /// Dropout's stream: the step's seed, and the micro step.
  uint64_t Seed = 0;

  const Value &outValue(unsigned I) const { return G.Values[N.Outputs[I]]; }
  /// A fresh output tensor of the shape and type inference gave it.
  HostTensor &fresh(unsigned I) {
    const Value &V = outValue(I);
    Out[I] = HostTensor(V.Type, V.Dims); // Zeros, in float storage for floats.
    return Out[I];
  }
  llvm::Error error(const llvm::Twine &Message) const {
    return G.nodeError(N, Message);
  }
};

/// What a gradient rule sees: the forward node, the gradients flowing into
/// its outputs, and a builder for the nodes that compute its inputs'
/// gradients. The first error sticks; later emits return NoValue.
class GradContext {
public:
  GradContext(Graph &G, uint32_t NodeIndex, std::vector<ValueId> OutGrads,
              std::vector<bool> Needs, double Order);

  Graph &G;
  /// A copy of the forward node: emitting grows G.Nodes and G.Values, so a
  /// rule holds no reference into them across an emit.
  const Node &node() const { return Fwd; }
  ValueId input(unsigned I) const { return Fwd.Inputs[I]; }
  ValueId output(unsigned I) const { return Fwd.Outputs[I]; }
  Shape shape(ValueId V) const { return G.Values[V].Dims; }
  /// The gradient flowing into output I, NoValue when it has none.
  ValueId dOut(unsigned I) const {
    return I < OutGrads.size() ? OutGrads[I] : NoValue;
  }
  /// Whether input I needs a gradient.
  bool needs(unsigned I) const { return I < Needs.size() && Needs[I]; }
  void setGrad(unsigned I, ValueId V) {
    if (needs(I))
      InGrads[I] = V;
  }

  /// Emits a backward node; its outputs, or NoValues after an error.
  std::vector<ValueId> emitN(llvm::StringRef Op, std::vector<ValueId> Ins,
                             Attributes A, unsigned NumOutputs);
  ValueId emit(llvm::StringRef Op, std::vector<ValueId> Ins,
               Attributes A = {}) {
    return emitN(Op, std::move(Ins), std::move(A), 1)[0];
  }

  // Builders for the common shapes of a rule.
  ValueId scalar(double V);
  ValueId add(ValueId A, ValueId B) { return emit("Add", {A, B}); }
  ValueId sub(ValueId A, ValueId B) { return emit("Sub", {A, B}); }
  ValueId mul(ValueId A, ValueId B) { return emit("Mul", {A, B}); }
  ValueId div(ValueId A, ValueId B) { return emit("Div", {A, B}); }
  ValueId neg(ValueId A) { return emit("Neg", {A}); }
  ValueId reshape(ValueId A, const Shape &S);
  ValueId transpose(ValueId A, std::vector<int64_t> Perm);
  /// Sums G over the dims along which a value of shape Target was
  /// broadcast to G's shape: the gradient of a broadcast.
  ValueId sumTo(ValueId G, const Shape &Target);

  llvm::Error takeError() {
    Failed = false;
    return std::move(Err);
  }
  bool failed() const { return Failed; }
  void fail(const llvm::Twine &Message);
  const std::vector<ValueId> &inputGrads() const { return InGrads; }

private:
  uint32_t NodeIndex;
  Node Fwd;
  std::vector<ValueId> OutGrads;
  std::vector<bool> Needs;
  std::vector<ValueId> InGrads;
  double Order;
  bool Failed = false;
  llvm::Error Err = llvm::Error::success();
};

using InferFn = llvm::Error (*)(InferContext &);
using EvalFn = llvm::Error (*)(EvalContext &);
using GradFn = void (*)(GradContext &);

enum OpFlags : unsigned {
  /// Computes each output element from the broadcast input elements at
  /// the same index.
  Elementwise = 1u << 0,
  /// Its output is its first input under another shape or a strided view:
  /// no kernel once lowered.
  ViewOp = 1u << 1,
  /// Produces integers or booleans only (index and mask arithmetic):
  /// nothing flows back through it.
  NoGradient = 1u << 2,
  /// Draws random numbers (dropout).
  Random = 1u << 3,
};

class KernelBuilder;
/// An op's lowering to the plan's kernels (dsc/Compute/Lowering.h).
using LowerFn = llvm::Error (*)(KernelBuilder &, const Node &);

struct OpDef {
  const char *Name;
  InferFn Infer;
  EvalFn Eval;  ///< Null: cannot be folded or interpreted.
  GradFn Grad;  ///< Null: no gradient rule.
  unsigned Flags;
  const char *Summary;
  LowerFn Lower = nullptr; ///< Null: dsc has no kernel for it.
};

/// The definition of an operator, or null when dsc has none.
const OpDef *findOp(llvm::StringRef Name);
/// Every registered operator, sorted by name (docs, coverage tables).
std::vector<const OpDef *> allOps();

// The families (one per file), collected by the registry.
llvm::ArrayRef<OpDef> elementwiseOps();
llvm::ArrayRef<OpDef> shapeOps();
llvm::ArrayRef<OpDef> mathOps();
llvm::ArrayRef<OpDef> nnOps();

/// The pointwise instruction an elementwise node computes; nullopt for a
/// copy (Identity, Cast) or a node that is not elementwise.
std::optional<plan::PointwiseOp> pointwiseOpOf(const Node &N);

/// Runs Op's host evaluation on inputs of the given shapes and types
/// (used by folding and the interpreter).
llvm::Error evaluate(const Graph &G, const Node &N,
                     std::vector<const HostTensor *> In,
                     std::vector<HostTensor> &Out, uint64_t Seed = 0);

} // namespace dsc::compute

#endif
