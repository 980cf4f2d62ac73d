//===- Kernels.cpp - Kernel selection, views and storage ------------------===//

#include "dsc/Compute/Kernels.h"
#include "dsc/Compute/Lowering.h"

#include "dsc/AttentionAlgorithms.h"
#include "dsc/KernelRegistry.h"
#include "dsc/PlanCodec.h"
#include "dsc/Compute/Ops.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <cstring>
#include <map>
#include <set>

using namespace llvm;

namespace dsc::compute {

namespace {

using plan::KernelKind;
using plan::PointwiseOp;

/// Where a value's elements are: a view of a plan value's storage.
struct Loc {
  uint32_t Value = plan::NoIndex;
  int64_t Offset = 0;
  Shape Strides;
  bool valid() const { return Value != plan::NoIndex; }
};

/// Strides for viewing (Shape, Strides) as NewShape without copying, as
/// torch's view does; nullopt when the elements are not laid out for it.
std::optional<Shape> reshapeStrides(const Shape &Old, const Shape &Strides,
                                    const Shape &New) {
  if (numel(Old) == 0 || Old.empty())
    return contiguousStrides(New);
  Shape Out(New.size(), 1);
  int64_t ViewD = int64_t(New.size()) - 1;
  int64_t Chunk = Strides.back(), TensorNumel = 1, ViewNumel = 1;
  for (int64_t D = int64_t(Old.size()) - 1; D >= 0; --D) {
    TensorNumel *= Old[size_t(D)];
    if (D == 0 || (Old[size_t(D - 1)] != 1 &&
                   Strides[size_t(D - 1)] != TensorNumel * Chunk)) {
      while (ViewD >= 0 &&
             (ViewNumel < TensorNumel || New[size_t(ViewD)] == 1)) {
        Out[size_t(ViewD)] = ViewNumel * Chunk;
        ViewNumel *= New[size_t(ViewD)];
        --ViewD;
      }
      if (ViewNumel != TensorNumel)
        return std::nullopt;
      if (D > 0) {
        Chunk = Strides[size_t(D - 1)];
        TensorNumel = 1;
        ViewNumel = 1;
      }
    }
  }
  if (ViewD != -1)
    return std::nullopt;
  return Out;
}

/// Rows of a padded value start at multiples of this many elements (16
/// bytes of bf16), for rows at least MinPaddedRow long.
constexpr int64_t RowAlign = 8, MinPaddedRow = 256;

/// Strides of a product of shape S ([batch..., Rows, Cols], the batch dims
/// folded into Rows: Total rows in all) stored transposed, as a dense
/// [Cols, Total] matrix.
Shape transposedStrides(const Shape &S, int64_t Total) {
  size_t R = S.size();
  Shape St(R);
  St[R - 1] = Total;
  int64_t Step = 1;
  for (size_t K = R - 1; K-- > 0;) {
    St[K] = Step;
    Step *= S[K];
  }
  return St;
}

/// The strides of (S, Strides) broadcast to Out's shape.
Shape broadcastStrides(const Shape &S, const Shape &Strides, const Shape &Out) {
  Shape R(Out.size(), 0);
  size_t Lead = Out.size() - S.size();
  for (size_t K = 0; K < S.size(); ++K)
    if (S[K] != 1)
      R[Lead + K] = Strides[K];
  return R;
}

/// Outputs kept in fp32 whatever the training dtype: statistics.
bool isStatistic(const Node &N, unsigned Output) {
  StringRef Op = N.Op;
  return (Op == "LayerNormalization" && Output > 0) ||
         (Op == "dsc.RMSNorm" && Output == 1) ||
         (Op == "dsc.Attention" && Output == 1) || Op == "dsc.CrossEntropy";
}

/// A one-instruction program over NumInputs registers: Op reads the
/// inputs (or Args).
plan::PointwiseAttrs program(PointwiseOp Op, unsigned NumInputs,
                             std::vector<uint32_t> Args = {}) {
  if (Args.empty())
    for (unsigned K = 0; K < NumInputs; ++K)
      Args.push_back(K);
  Args.resize(3, 0);
  plan::PointwiseAttrs P;
  P.Registers = NumInputs + 1;
  P.Program = {{Op, NumInputs, Args[0], Args[1], Args[2]}};
  P.Results = {NumInputs};
  return P;
}
class Selector : public KernelBuilder {
public:
  Selector(const Graph &G, const KernelOptions &O) : G(G), O(O) {
    Locs.resize(G.Values.size());
    P.ValueOf.assign(G.Values.size(), plan::NoIndex);
    GradOf.assign(G.Values.size(), -1);
    for (size_t I = 0; I < G.Params.size(); ++I)
      if (G.Params[I].Grad != NoValue)
        GradOf[G.Params[I].Grad] = int32_t(I);
    Readers.resize(G.Values.size());
    for (uint32_t I = 0; I < G.Nodes.size(); ++I)
      if (!G.Nodes[I].Dead)
        for (ValueId V : G.Nodes[I].Inputs)
          if (V != NoValue)
            Readers[V].push_back(I);
  }

  Expected<KernelProgram> run();

  // KernelBuilder.
  const Graph &graph() const override { return G; }
  const KernelOptions &options() const override { return O; }
  const std::vector<plan::Value> &values() const override { return P.Values; }
  plan::TensorRef ref(ValueId V) override {
    return ref(loc(V), G.Values[V].Dims);
  }
  plan::TensorRef rowsRef(ValueId V, bool Padded = false) override {
    return ref(rows(V, Padded), G.Values[V].Dims);
  }
  plan::TensorRef broadcastRef(ValueId V, const Shape &Out) override {
    const Loc &L = loc(V);
    return {L.Value, uint64_t(L.Offset), Out,
            broadcastStrides(G.Values[V].Dims, L.Strides, Out)};
  }
  plan::TensorRef contiguousRef(ValueId V) override {
    return ref(contiguousCopy(V), G.Values[V].Dims);
  }
  plan::TensorRef output(ValueId V, bool PadRows = false) override {
    return ref(own(V, PadRows), G.Values[V].Dims);
  }
  void emit(plan::Kernel K) override {
    K.Op = CurrentNode;
    K.Backward = Backward;
    plan::costKernel(K, P.Values);
    P.Kernels.push_back(std::move(K));
    P.Node.push_back(CurrentNode);
  }
  void setLoss(plan::LossKind Loss) override { P.Training.Loss = Loss; }
  Error view(const Node &N) override;
  Error pointwise(const Node &N) override;
  Error product(const Node &N) override;

private:
  DType typeOf(ValueId V) const {
    const Value &X = G.Values[V];
    if (!X.isFloat())
      return X.Type == DType::U8 ? DType::U8 : DType::I32;
    if (X.Producer >= 0) {
      const Node &N = G.Nodes[X.Producer];
      for (unsigned K = 0; K < N.Outputs.size(); ++K)
        if (N.Outputs[K] == V && isStatistic(N, K))
          return DType::F32;
    }
    return O.Activation;
  }
  uint32_t newValue(std::string Name, plan::ValueKind Kind, DType Type,
                    uint64_t Elems, uint32_t Tensor = plan::NoIndex) {
    plan::Value V;
    V.Name = std::move(Name);
    V.Kind = Kind;
    V.Type = Type;
    V.Elems = Elems;
    V.Tensor = Tensor;
    P.Values.push_back(std::move(V));
    return uint32_t(P.Values.size() - 1);
  }
  /// Gives graph value V storage of its own; with PadRows, rows of a
  /// width cuBLAS cannot align (see padsRows) start at multiples of 8.
  Loc own(ValueId V, bool PadRows = false) {
    const Value &X = G.Values[V];
    plan::ValueKind Kind = Backward ? plan::ValueKind::Gradient
                                    : plan::ValueKind::Activation;
    uint32_t Tensor = plan::NoIndex;
    if (V == G.Loss)
      Kind = plan::ValueKind::Loss;
    if (GradOf[V] >= 0 && GradClaimed.insert(V).second) {
      Kind = plan::ValueKind::ParamGrad;
      Tensor = tensorOf(G.Params[size_t(GradOf[V])]);
    }
    Shape Stored = X.Dims;
    if (PadRows && Kind != plan::ValueKind::ParamGrad && padsRows(V))
      Stored.back() = (Stored.back() + RowAlign - 1) / RowAlign * RowAlign;
    uint32_t Id = newValue(X.Name, Kind, Kind == plan::ValueKind::ParamGrad
                                             ? O.Activation
                                             : typeOf(V),
                           uint64_t(numel(Stored)), Tensor);
    Loc L{Id, 0, contiguousStrides(Stored)};
    Locs[V] = L;
    P.ValueOf[V] = Id;
    return L;
  }
  plan::TensorRef ref(const Loc &L, const Shape &S) const {
    return {L.Value, uint64_t(L.Offset), S, L.Strides};
  }
  /// V's storage; a constant gets its own when a kernel first reads it.
  const Loc &loc(ValueId V);
  /// A contiguous copy of V (for a kernel that needs one), broadcast to
  /// Full when given.
  Loc contiguousCopy(ValueId V, std::optional<Shape> Full = std::nullopt) {
    const Value &X = G.Values[V];
    Shape S = Full ? *Full : X.Dims;
    uint32_t Id = newValue(X.Name + ".contiguous",
                           Backward ? plan::ValueKind::Gradient
                                    : plan::ValueKind::Activation,
                           typeOf(V), uint64_t(numel(S)));
    Loc L{Id, 0, contiguousStrides(S)};
    plan::Kernel K;
    K.Name = X.Name + " (copy)";
    K.Inputs = {broadcastRef(V, S)};
    K.Outputs = {ref(L, S)};
    K.Attrs = copyProgram();
    emit(std::move(K));
    return L;
  }
  /// V laid out row-major (a kernel reading rows); with Padded, rows may
  /// start further apart than their length.
  Loc rows(ValueId V, bool Padded = false) {
    const Loc &L = loc(V);
    const Shape &S = G.Values[V].Dims;
    bool Rows = isContiguous(S, L.Strides) ||
                (Padded && plan::rowStride(S, L.Strides) != 0);
    return Rows ? L : contiguousCopy(V);
  }
  /// Whether V gets padded rows: a float activation or gradient of at least
  /// two dims whose rows are wide (a vocabulary of 50,257) but not a
  /// multiple of 8 elements, which keeps every product reading or writing
  /// them off cuBLAS's aligned kernels (GPT-2's LM head ran at a third of
  /// the speed of its other products). Only where every reader takes
  /// strided rows: products, the loss and its gradient, and views read by
  /// those that keep the row (or transpose it).
  bool padsRows(ValueId V) const {
    const Shape &S = G.Values[V].Dims;
    return S.size() >= 2 && S.back() >= MinPaddedRow &&
           S.back() % RowAlign != 0 && G.Values[V].isFloat() &&
           readersTakePaddedRows(V);
  }
  /// The forward Add that is the only reader of product C and adds a
  /// dense vector of N elements of C's type to its rows: (its node, the
  /// vector).
  std::optional<std::pair<uint32_t, ValueId>> biasAddOf(ValueId C,
                                                        int64_t N) {
    if (Backward || Readers[C].size() != 1 || GradOf[C] >= 0)
      return std::nullopt;
    uint32_t I = Readers[C][0];
    const Node &Add = G.Nodes[I];
    if (Add.Op != "Add" || Add.Inputs.size() != 2 ||
        Add.Inputs[0] == Add.Inputs[1] || Add.Ph == Phase::Backward ||
        G.Values[Add.Outputs[0]].Dims != G.Values[C].Dims)
      return std::nullopt;
    ValueId Bias = Add.Inputs[Add.Inputs[0] == C ? 1 : 0];
    const Value &B = G.Values[Bias];
    if (B.Dims != Shape{N} || !B.isFloat() ||
        (B.Kind == ValueKind::Constant && !Locs[Bias].valid()))
      return std::nullopt;
    const Loc &L = loc(Bias);
    if (!L.valid() || L.Strides != Shape{1} ||
        P.Values[L.Value].Type != typeOf(C))
      return std::nullopt;
    return std::pair{I, Bias};
  }
  /// V, or the value a chain of reshapes that are each value's only
  /// reader makes of it (their nodes added to Chain).
  ValueId pastReshapes(ValueId V, std::vector<uint32_t> &Chain) const {
    while (Readers[V].size() == 1) {
      const Node &N = G.Nodes[Readers[V][0]];
      StringRef Op = N.Op;
      if (!(Op == "Reshape" || Op == "Flatten" || Op == "Squeeze" ||
            Op == "Unsqueeze") ||
          N.Outputs.size() != 1 || N.Inputs[0] != V)
        break;
      Chain.push_back(Readers[V][0]);
      V = N.Outputs[0];
    }
    return V;
  }
  /// The forward GELU (tanh form) that is the only forward reader of V
  /// (past reshapes): its node. cuBLASLt's GELU epilogue computes that
  /// form; the exact (erf) one stays a pointwise kernel.
  std::optional<uint32_t> tanhGeluOf(ValueId V) const {
    std::vector<uint32_t> Chain;
    V = pastReshapes(V, Chain);
    std::optional<uint32_t> Gelu;
    for (uint32_t I : Readers[V]) {
      const Node &N = G.Nodes[I];
      if (N.Ph == Phase::Backward)
        continue;
      if (Gelu || N.Op != "Gelu" || N.A.s("approximate") != "tanh")
        return std::nullopt;
      Gelu = I;
    }
    return Gelu;
  }
  /// The gradient through GELU (tanh form) that is product C's only
  /// reader (past reshapes, added to Chain), C being its dy, and whose
  /// pre-activation is stored as dense rows of N elements: its node.
  std::optional<uint32_t> tanhGeluGradOf(ValueId C, int64_t N,
                                         std::vector<uint32_t> &Chain) {
    if (GradOf[C] >= 0)
      return std::nullopt;
    ValueId Dy = pastReshapes(C, Chain);
    if (Readers[Dy].size() != 1 || GradOf[Dy] >= 0)
      return std::nullopt;
    uint32_t I = Readers[Dy][0];
    const Node &Grad = G.Nodes[I];
    if (Grad.Op != "dsc.GeluGrad" || Grad.A.s("approximate") != "tanh" ||
        Grad.Inputs.size() != 2 || Grad.Inputs[1] != Dy ||
        Grad.Inputs[0] == Dy)
      return std::nullopt;
    ValueId X = Grad.Inputs[0];
    const Loc &L = loc(X);
    const Shape &XS = G.Values[X].Dims;
    if (!L.valid() || L.Offset != 0 || XS.size() < 2 || XS.back() != N ||
        numel(XS) != numel(G.Values[C].Dims) ||
        L.Strides != contiguousStrides(XS) ||
        P.Values[L.Value].Type != typeOf(C) || N % 8)
      return std::nullopt;
    return I;
  }
  /// Whether V is read only through transposes of its last two dims.
  bool readAllTransposed(ValueId V) const {
    size_t Rank = G.Values[V].Dims.size();
    if (Readers[V].empty() || Rank < 2)
      return false;
    for (uint32_t I : Readers[V]) {
      const Node &N = G.Nodes[I];
      if (N.Op != "Transpose")
        return false;
      std::vector<int64_t> Perm =
          N.A.ints("perm").value_or(std::vector<int64_t>());
      if (Perm.empty() && Rank == 2)
        continue;
      if (Perm.size() != Rank)
        return false;
      for (size_t K = 0; K < Rank; ++K)
        if (Perm[K] != int64_t(K < Rank - 2 ? K : (K == Rank - 2 ? Rank - 1
                                                                 : Rank - 2)))
          return false;
    }
    return true;
  }
  bool readersTakePaddedRows(ValueId V) const {
    for (uint32_t I : Readers[V]) {
      const Node &N = G.Nodes[I];
      StringRef Op = N.Op;
      if (Op == "MatMul" ||
          ((Op == "dsc.CrossEntropy" || Op == "dsc.CrossEntropyGrad") &&
           N.Inputs[0] == V))
        continue;
      if (!(N.Def->Flags & ViewOp) || N.Outputs.size() != 1)
        return false;
      ValueId Out = N.Outputs[0];
      bool KeepsRows = Op == "Transpose" ||
                       (!G.Values[Out].Dims.empty() &&
                        G.Values[Out].Dims.back() == G.Values[V].Dims.back());
      if (!KeepsRows || !readersTakePaddedRows(Out))
        return false;
    }
    return true;
  }

  Error select(uint32_t Node);
  /// Pairs each bias gradient (a ReduceSum over dy's rows) with the later
  /// weight-gradient product whose epilogue can compute it.
  void findBiasGradients();
  /// A parameter's gradient that is a view of another value: copied into
  /// the gradient's own storage.
  void materializeParamGrad(ValueId V);
  /// The plan tensor of a parameter; NoIndex where the caller maps none.
  uint32_t tensorOf(const ParamInfo &Param) const {
    return O.TensorOf ? O.TensorOf(Param) : plan::NoIndex;
  }

  const Graph &G;
  const KernelOptions &O;
  KernelProgram P;
  std::vector<Loc> Locs;
  /// Constants by a hash of their stored elements, and of their bytes in
  /// the plan: identical ones (each layer's copy of the rotary tables, a
  /// mask made twice) share one value.
  std::multimap<uint64_t, ValueId> ConstantsByStorage, ConstantsByBytes;
  std::vector<int32_t> GradOf;
  /// The live nodes that read each value.
  std::vector<std::vector<uint32_t>> Readers;
  /// Nodes another kernel computes (a bias add in a product's epilogue).
  std::set<uint32_t> FusedAway;
  /// Weight-gradient products and the bias gradient each may compute:
  /// the ReduceSum's node, and whether dy is the product's B (else dy^T
  /// is its A).
  struct BiasGrad {
    uint32_t Reduce;
    bool DyIsB;
  };
  std::map<uint32_t, BiasGrad> BiasGradFor;
  std::set<ValueId> GradClaimed;
  uint32_t CurrentNode = 0;
  bool Backward = false;
  Error ConstantError = Error::success();
};

void Selector::materializeParamGrad(ValueId V) {
  if (GradOf[V] < 0 || GradClaimed.count(V))
    return;
  GradClaimed.insert(V);
  const Value &X = G.Values[V];
  uint32_t Id = newValue(X.Name, plan::ValueKind::ParamGrad, O.Activation,
                         uint64_t(numel(X.Dims)),
                         tensorOf(G.Params[size_t(GradOf[V])]));
  Loc L{Id, 0, contiguousStrides(X.Dims)};
  plan::Kernel K;
  K.Name = X.Name + " (gradient)";
  K.Inputs = {ref(V)};
  K.Outputs = {ref(L, X.Dims)};
  K.Attrs = copyProgram();
  emit(std::move(K));
  Locs[V] = L;
  P.ValueOf[V] = Id;
}

Error Selector::view(const Node &N) {
  ValueId X = N.Inputs[0];
  const Loc In = loc(X);
  const Shape &XS = G.Values[X].Dims;
  StringRef Op = N.Op;
  auto Set = [&](ValueId Out, Loc L) {
    Locs[Out] = std::move(L);
    P.ValueOf[Out] = Locs[Out].Value;
  };
  if (Op == "Transpose") {
    std::vector<int64_t> Perm =
        N.A.ints("perm").value_or(std::vector<int64_t>());
    if (Perm.empty())
      for (int64_t K = int64_t(XS.size()) - 1; K >= 0; --K)
        Perm.push_back(K);
    Loc L = In;
    for (size_t K = 0; K < Perm.size(); ++K)
      L.Strides[K] = In.Strides[size_t(Perm[K])];
    Set(N.Outputs[0], L);
  } else if (Op == "Expand") {
    const Shape &Out = G.Values[N.Outputs[0]].Dims;
    Set(N.Outputs[0], {In.Value, In.Offset, broadcastStrides(XS, In.Strides, Out)});
  } else if (Op == "Slice") {
    Loc L = In;
    std::vector<int64_t> A = *N.A.ints("dsc_axes"), S = *N.A.ints("dsc_starts"),
                         St = *N.A.ints("dsc_steps");
    for (size_t K = 0; K < A.size(); ++K) {
      L.Offset += S[K] * L.Strides[size_t(A[K])];
      L.Strides[size_t(A[K])] *= St[K];
    }
    Set(N.Outputs[0], L);
  } else if (Op == "Split") {
    int64_t Axis = N.A.i("axis", 0), At = 0;
    std::vector<int64_t> Sizes = *N.A.ints("split");
    for (size_t K = 0; K < Sizes.size(); ++K) {
      Loc L = In;
      L.Offset += At * In.Strides[size_t(Axis)];
      Set(N.Outputs[K], L);
      At += Sizes[K];
    }
  } else { // Reshape, Flatten, Squeeze, Unsqueeze.
    const Shape &Out = G.Values[N.Outputs[0]].Dims;
    if (std::optional<Shape> S = reshapeStrides(XS, In.Strides, Out)) {
      Set(N.Outputs[0], {In.Value, In.Offset, *S});
    } else {
      Loc C = contiguousCopy(X);
      Set(N.Outputs[0], {C.Value, 0, contiguousStrides(Out)});
    }
  }
  for (ValueId V : N.Outputs)
    materializeParamGrad(V);
  return Error::success();
}

Error Selector::pointwise(const Node &N) {
  const Shape &Out = G.Values[N.Outputs[0]].Dims;
  plan::Kernel K;
  K.Name = N.Name;
  StringRef Op = N.Op;
  unsigned Used = Op == "CastLike" ? 1 : unsigned(N.Inputs.size());
  for (unsigned I = 0; I < Used; ++I)
    K.Inputs.push_back(broadcastRef(N.Inputs[I], Out));
  if (Op == "Dropout" || Op == "dsc.DropoutGrad") {
    // Register 0 kept with probability 1 - constant 0, in its stream.
    K.Inputs.resize(1);
    plan::PointwiseAttrs P = program(
        PointwiseOp::Dropout, 1, {0, 0, uint32_t(N.A.i("dsc_stream", 0))});
    P.Constants = {N.A.f("ratio", 0.5)};
    K.Attrs = std::move(P);
  } else if (std::optional<PointwiseOp> P = pointwiseOpOf(N)) {
    if (*P == PointwiseOp::Mod && N.A.i("fmod", 0))
      return G.nodeError(N, "dsc has no kernel for fmod=1");
    K.Attrs = program(*P, Used);
  } else {
    // A copy (Identity, Cast): the store converts to the output's type; a
    // float to an integer truncates, as ONNX's Cast does.
    K.Attrs =
        G.Values[N.Outputs[0]].isFloat() || !G.Values[N.Inputs[0]].isFloat()
            ? copyProgram()
            : program(PointwiseOp::Trunc, 1);
  }
  Loc L = own(N.Outputs[0]);
  K.Outputs = {ref(L, Out)};
  emit(std::move(K));
  return Error::success();
}

/// cuBLAS runs a single product whose N or K is wide and not a multiple of
/// 8 (GPT-2's vocabulary of 50,257) at a fraction of its speed: 95 and 134
/// TFLOP/s on an H100 for the LM head's forward and input gradient, padded
/// rows or not, against 400-515 for the model's other products. Such a
/// product runs as two, the first over the largest multiple of 8 and the
/// second over the rest. Split along K, the second adds into the first's
/// stored output (beta 1): one more rounding of C, in C's type.
std::vector<plan::Kernel> splitUnaligned(plan::Kernel K) {
  plan::GemmAttrs &G = K.attrs<KernelKind::Gemm>();
  auto Wide = [](int64_t D) { return D >= MinPaddedRow && D % RowAlign; };
  if (G.Batch != 1 || (!Wide(G.N) && !Wide(G.K)))
    return {std::move(K)};
  plan::Kernel Rest = K;
  plan::GemmAttrs &R = Rest.attrs<KernelKind::Gemm>();
  plan::TensorRef &A0 = K.Inputs[0], &B0 = K.Inputs[1], &A1 = Rest.Inputs[0],
                  &B1 = Rest.Inputs[1];
  auto Cols = [](plan::TensorRef &Ref, bool AlongRows, int64_t From,
                 int64_t Count) {
    // Dim 1 (rows) or 2 (columns) of a [1, rows, cols] view.
    size_t D = AlongRows ? 1 : 2;
    Ref.Offset += uint64_t(From * Ref.Strides[D]);
    Ref.Shape[D] = Count;
  };
  if (Wide(G.N)) {
    int64_t N = G.N, N8 = N / RowAlign * RowAlign;
    G.N = N8;
    R.N = N - N8;
    Cols(B0, G.TransB, 0, N8);
    Cols(B1, G.TransB, N8, N - N8);
    Cols(K.Outputs[0], false, 0, N8);
    Cols(Rest.Outputs[0], false, N8, N - N8);
    if (K.Inputs.size() > 2) {
      K.Inputs[2].Shape = {N8};
      Rest.Inputs[2].Offset += uint64_t(N8);
      Rest.Inputs[2].Shape = {N - N8};
    }
    Rest.Name += " (last columns)";
  } else {
    int64_t Kd = G.K, K8 = Kd / RowAlign * RowAlign;
    G.K = K8;
    R.K = Kd - K8;
    Cols(A0, G.TransA, 0, K8);
    Cols(A1, G.TransA, K8, Kd - K8);
    Cols(B0, !G.TransB, 0, K8);
    Cols(B1, !G.TransB, K8, Kd - K8);
    Rest.Inputs.resize(2);
    R.Epilogue = plan::GemmEpilogue::None;
    R.Beta = 1.0;
    Rest.Name += " (last terms)";
  }
  return {std::move(K), std::move(Rest)};
}

/// A matrix operand of a Gemm: its storage as (batch stride, leading
/// dimension, transposed), or nullopt when the layout needs a copy.
struct MatrixLayout {
  int64_t BatchStride, Ld;
  bool Trans;
};
std::optional<MatrixLayout> matrixLayout(const Shape &S, const Shape &Strides,
                                         const Shape &Batch) {
  size_t R = S.size();
  int64_t Rows = S[R - 2], Cols = S[R - 1];
  int64_t RS = Strides[R - 2], CS = Strides[R - 1];
  MatrixLayout L{0, 0, false};
  if ((CS == 1 || Cols == 1) && (RS >= std::max<int64_t>(Cols, 1) || Rows == 1)) {
    L.Ld = Rows == 1 ? std::max<int64_t>(Cols, 1) : RS;
  } else if ((RS == 1 || Rows == 1) &&
             (CS >= std::max<int64_t>(Rows, 1) || Cols == 1)) {
    L.Trans = true;
    L.Ld = Cols == 1 ? std::max<int64_t>(Rows, 1) : CS;
  } else {
    return std::nullopt;
  }
  // The batch dims (broadcast to Batch) must collapse to one stride.
  Shape BS = broadcastStrides(Shape(S.begin(), S.end() - 2),
                              Shape(Strides.begin(), Strides.end() - 2), Batch);
  int64_t Stride = -1, Span = 1;
  for (size_t K = Batch.size(); K-- > 0;) {
    if (Batch[K] == 1)
      continue;
    if (Stride < 0)
      Stride = BS[K];
    else if (BS[K] != Stride * Span)
      return std::nullopt;
    Span *= Batch[K];
  }
  L.BatchStride = Stride < 0 ? 0 : Stride;
  return L;
}

Error Selector::product(const Node &N) {
  uint32_t Self = CurrentNode;
  ValueId A = N.Inputs[0], B = N.Inputs[1], C = N.Outputs[0];
  Shape SA = G.Values[A].Dims, SB = G.Values[B].Dims, SC = G.Values[C].Dims;
  if (SA.size() < 2 || SB.size() < 2)
    return G.nodeError(N, "dsc has no kernel for a matrix-vector product");
  Shape Batch(SC.begin(), SC.end() - 2);
  int64_t M = SA[SA.size() - 2], K = SA.back(), Nn = SB.back();
  int64_t Count = numel(Batch);
  // Each operand as stored, else a contiguous copy, else a copy expanded
  // to the whole batch (batch dims broadcast unevenly).
  auto Operand = [&](ValueId V, Shape &S, Loc &L) {
    L = loc(V);
    std::optional<MatrixLayout> M = matrixLayout(S, L.Strides, Batch);
    if (!M) {
      L = contiguousCopy(V);
      M = matrixLayout(S, L.Strides, Batch);
    }
    if (!M) {
      Shape Full = Batch;
      Full.push_back(S[S.size() - 2]);
      Full.push_back(S.back());
      L = contiguousCopy(V, Full);
      S = Full;
      M = matrixLayout(S, L.Strides, Batch);
    }
    return M;
  };
  Loc LA, LB;
  std::optional<MatrixLayout> MA = Operand(A, SA, LA);
  std::optional<MatrixLayout> MB = Operand(B, SB, LB);
  if (!MA || !MB)
    return G.nodeError(N, "no strided batched product can read its operands");
  // A weight shared by the whole batch, and rows of A evenly spaced: one
  // product of Batch * M rows.
  if (Count > 1 && MB->BatchStride == 0 && !MA->Trans &&
      MA->BatchStride == M * MA->Ld) {
    M *= Count;
    Count = 1;
    MA->BatchStride = MB->BatchStride = 0;
  }
  plan::Kernel Kr;
  plan::GemmAttrs &Ga = Kr.Attrs.emplace<plan::GemmAttrs>();
  Kr.Name = N.Name;
  int64_t RowsA = MA->Trans ? K : M, ColsA = MA->Trans ? M : K;
  int64_t RowsB = MB->Trans ? Nn : K, ColsB = MB->Trans ? K : Nn;
  std::optional<plan::TensorRef> BiasRef;
  plan::TensorRef RA{LA.Value, uint64_t(LA.Offset), {Count, RowsA, ColsA},
                     {MA->BatchStride, MA->Ld, 1}},
      RB{LB.Value, uint64_t(LB.Offset), {Count, RowsB, ColsB},
         {MB->BatchStride, MB->Ld, 1}};
  bool Flipped = Count == 1 && GradOf[C] < 0 && readAllTransposed(C);
  if (Flipped) {
    // Every reader reads the product transposed (a weight's gradient
    // X^T dY, which autodiff transposes into the weight's layout): compute
    // C^T = op(B)^T op(A)^T, so the readers see dense rows and the output
    // rows are as long as the weight's (768, not a vocabulary of 50,257).
    Loc LC = own(C);
    LC.Strides = transposedStrides(SC, M);
    Locs[C] = LC;
    Kr.Inputs = {RB, RA};
    Kr.Outputs = {plan::TensorRef{LC.Value, 0, {1, Nn, M}, {Nn * M, M, 1}}};
    Ga.M = Nn, Ga.N = M, Ga.K = K, Ga.Batch = 1;
    Ga.TransA = !MB->Trans, Ga.TransB = !MA->Trans;
    Ga.LdA = MB->Ld, Ga.LdB = MA->Ld, Ga.LdC = M;
    Ga.StrideC = Nn * M;
  } else {
    // A bias added to every row (a Linear's, an addmm's) is the product's
    // epilogue, and the sum is its output: no pass over the product.
    ValueId Out = C;
    plan::GemmEpilogue Epilogue = plan::GemmEpilogue::None;
    // Products cuBLASLt runs whole (not split for an odd width) can also
    // take GELU: forward, applied to the biased sum, which is kept for
    // the backward; backward, its gradient applied to dy = the product.
    bool Whole = Count == 1 && Nn % 8 == 0 && K % 8 == 0;
    std::optional<uint32_t> GeluNode;
    std::optional<plan::TensorRef> AuxIn;
    if (Count == 1)
      if (std::optional<std::pair<uint32_t, ValueId>> Add =
              biasAddOf(C, Nn)) {
        // The kernel is the Add's: its op then owns the product (whose
        // only reader it is) and the bias, so stage 3 gathers both for it.
        FusedAway.insert(Add->first);
        CurrentNode = Add->first;
        Out = G.Nodes[Add->first].Outputs[0];
        const Loc &LBias = loc(Add->second);
        Kr.Name = G.Nodes[Add->first].Name + " (product and bias)";
        BiasRef = plan::TensorRef{LBias.Value, uint64_t(LBias.Offset), {Nn},
                                  {1}};
        Epilogue = plan::GemmEpilogue::Bias;
        if (Whole && (GeluNode = tanhGeluOf(Out))) {
          FusedAway.insert(*GeluNode);
          Epilogue = plan::GemmEpilogue::BiasGeluTanh;
          Kr.Name = G.Nodes[Add->first].Name + " (product, bias and GELU)";
        }
      }
    std::vector<uint32_t> Reshapes;
    if (Whole && Backward && (GeluNode = tanhGeluGradOf(C, Nn, Reshapes))) {
      // The product's output and its reshapes are never stored.
      const Node &Grad = G.Nodes[*GeluNode];
      FusedAway.insert(*GeluNode);
      FusedAway.insert(Reshapes.begin(), Reshapes.end());
      const Loc &LX = loc(Grad.Inputs[0]);
      AuxIn = plan::TensorRef{LX.Value, 0, {1, M, Nn}, {M * Nn, Nn, 1}};
      Out = Grad.Outputs[0];
      Epilogue = plan::GemmEpilogue::DGeluTanh;
      Kr.Name = Grad.Name + " (product and GELU gradient)";
    }
    Loc LC = own(Out, /*PadRows=*/true);
    int64_t LdC = LC.Strides[LC.Strides.size() - 2];
    Kr.Inputs = {RA, RB};
    if (BiasRef)
      Kr.Inputs.push_back(*BiasRef);
    if (AuxIn)
      Kr.Inputs.push_back(*AuxIn);
    Kr.Outputs = {
        plan::TensorRef{LC.Value, 0, {Count, M, Nn}, {M * LdC, LdC, 1}}};
    if (Epilogue == plan::GemmEpilogue::BiasGeluTanh) {
      // GELU's output first (what the next product reads), then the sum.
      Loc LG = own(G.Nodes[*GeluNode].Outputs[0]);
      Kr.Outputs.insert(Kr.Outputs.begin(),
                        plan::TensorRef{LG.Value, 0, {Count, M, Nn},
                                        {M * LdC, LdC, 1}});
    }
    Ga.M = M, Ga.N = Nn, Ga.K = K, Ga.Batch = Count;
    Ga.TransA = MA->Trans, Ga.TransB = MB->Trans;
    Ga.LdA = MA->Ld, Ga.LdB = MB->Ld, Ga.LdC = LdC;
    Ga.StrideA = MA->BatchStride, Ga.StrideB = MB->BatchStride;
    Ga.StrideC = M * LdC;
    Ga.Epilogue = Epilogue;
  }
  // The bias gradient beside a weight gradient, summed by cuBLASLt from
  // the operand dy while the product reads it.
  if (auto It = BiasGradFor.find(Self); It != BiasGradFor.end()) {
    const Node &R = G.Nodes[It->second.Reduce];
    ValueId Sum = R.Outputs[0];
    bool OfA = It->second.DyIsB == Flipped;
    int64_t Len = OfA ? Ga.M : Ga.N;
    if (Ga.Batch == 1 && Ga.Epilogue == plan::GemmEpilogue::None &&
        Ga.N % 8 == 0 && Ga.K % 8 == 0 &&
        numel(G.Values[Sum].Dims) == Len && typeOf(Sum) == typeOf(C)) {
      Loc LS = own(Sum);
      Kr.Outputs.push_back(plan::TensorRef{LS.Value, 0, {Len}, {1}});
      Ga.Epilogue = OfA ? plan::GemmEpilogue::BiasGradA
                        : plan::GemmEpilogue::BiasGradB;
      Kr.Name += " (and bias gradient)";
      FusedAway.insert(It->second.Reduce);
    }
  }
  for (plan::Kernel &Part : splitUnaligned(std::move(Kr)))
    emit(std::move(Part));
  return Error::success();
}

Error Selector::select(uint32_t I) {
  const Node &N = G.Nodes[I];
  CurrentNode = I;
  Backward = N.Ph == Phase::Backward;
  for (ValueId V : N.Inputs)
    if (V != NoValue && !Locs[V].valid() &&
        G.Values[V].Kind != ValueKind::Constant)
      return G.nodeError(N, "reads '" + G.Values[V].Name +
                                "', which has no storage");
  if (!N.Def->Lower)
    return G.nodeError(N, "dsc has no kernel for it");
  return N.Def->Lower(*this, N);
}

void Selector::findBiasGradients() {
  // A backward ReduceSum of dy over all but its last dim, and a later
  // product reading dy's rows (dy, or a reshape of it to [rows, N]) as B,
  // or their transpose as A: the weight gradient X^T dy or dy^T X.
  for (uint32_t R = 0; R < G.Nodes.size(); ++R) {
    const Node &N = G.Nodes[R];
    if (N.Dead || N.Ph != Phase::Backward || N.Op != "ReduceSum" ||
        N.Inputs.size() != 1 || N.Outputs.size() != 1)
      continue;
    ValueId Dy = N.Inputs[0];
    const Shape &S = G.Values[Dy].Dims;
    std::vector<int64_t> Leading;
    for (int64_t D = 0; D + 1 < int64_t(S.size()); ++D)
      Leading.push_back(D);
    if (S.size() < 2 ||
        N.A.ints("axes").value_or(std::vector<int64_t>()) != Leading)
      continue;
    Shape Rows = {numel(S) / S.back(), S.back()};
    std::vector<ValueId> AsRows, AsColumns;
    if (S == Rows)
      AsRows.push_back(Dy);
    for (uint32_t I : Readers[Dy]) {
      const Node &V = G.Nodes[I];
      if (V.Op == "Reshape" && V.Outputs.size() == 1 &&
          G.Values[V.Outputs[0]].Dims == Rows)
        AsRows.push_back(V.Outputs[0]);
    }
    for (ValueId V : AsRows)
      for (uint32_t I : Readers[V]) {
        const Node &T = G.Nodes[I];
        std::vector<int64_t> Perm =
            T.A.ints("perm").value_or(std::vector<int64_t>{1, 0});
        if (T.Op == "Transpose" && T.Outputs.size() == 1 &&
            Perm == std::vector<int64_t>{1, 0})
          AsColumns.push_back(T.Outputs[0]);
      }
    auto Pair = [&](ValueId V, unsigned Input) {
      for (uint32_t Mm : Readers[V]) {
        const Node &M = G.Nodes[Mm];
        if (Mm > R && !M.Dead && M.Op == "MatMul" &&
            M.Ph == Phase::Backward && M.Inputs.size() == 2 &&
            M.Inputs[Input] == V && !BiasGradFor.count(Mm)) {
          BiasGradFor[Mm] = {R, Input == 1};
          return true;
        }
      }
      return false;
    };
    bool Found = false;
    for (ValueId V : AsRows)
      Found = Found || Pair(V, 1);
    for (ValueId V : AsColumns)
      Found = Found || Pair(V, 0);
  }
}

Expected<KernelProgram> Selector::run() {
  // Storage the runtime fills: parameters, inputs, targets, constants.
  for (const ParamInfo &Pi : G.Params) {
    const Value &X = G.Values[Pi.Value];
    uint32_t Id = newValue(Pi.Name, plan::ValueKind::Param, O.Activation,
                           uint64_t(numel(X.Dims)), tensorOf(Pi));
    Locs[Pi.Value] = {Id, 0, contiguousStrides(X.Dims)};
    P.ValueOf[Pi.Value] = Id;
  }
  for (auto [List, Kind] :
       {std::pair{&G.Inputs, plan::ValueKind::Input},
        std::pair{&G.Targets, plan::ValueKind::Target}})
    for (ValueId V : *List) {
      const Value &X = G.Values[V];
      uint32_t Id = newValue(X.Name, Kind, typeOf(V), uint64_t(numel(X.Dims)));
      Locs[V] = {Id, 0, contiguousStrides(X.Dims)};
      P.ValueOf[V] = Id;
      (Kind == plan::ValueKind::Input ? P.Training.Inputs : P.Training.Targets)
          .push_back(Id);
    }
  findBiasGradients();
  // A bias gradient waits for the weight gradient whose product computes
  // it, and so do the nodes reading it (its reshape, the copy into the
  // parameter's gradient).
  std::map<uint32_t, std::vector<uint32_t>> Pending;
  std::map<ValueId, uint32_t> WaitsFor;
  std::set<uint32_t> Selected;
  // Selects the nodes that waited for Product, and those that waited for
  // a product among them.
  std::function<Error(uint32_t)> flush = [&](uint32_t Product) -> Error {
    Selected.insert(Product);
    std::vector<uint32_t> Nodes = std::move(Pending[Product]);
    Pending[Product].clear();
    for (uint32_t J : Nodes)
      if (!FusedAway.count(J)) {
        if (Error E = select(J))
          return E;
        if (Error E = flush(J))
          return E;
      }
    return Error::success();
  };
  for (uint32_t I = 0; I < G.Nodes.size(); ++I) {
    const Node &N = G.Nodes[I];
    if (N.Dead || FusedAway.count(I))
      continue;
    // The latest product this node waits for that is not selected yet.
    std::optional<uint32_t> Product;
    auto Wait = [&](uint32_t Mm) {
      if (!Selected.count(Mm) && (!Product || Mm > *Product))
        Product = Mm;
    };
    for (auto &[Mm, BG] : BiasGradFor)
      if (BG.Reduce == I)
        Wait(Mm);
    for (ValueId V : N.Inputs)
      if (auto It = WaitsFor.find(V); It != WaitsFor.end())
        Wait(It->second);
    if (Product) {
      Pending[*Product].push_back(I);
      for (ValueId V : N.Outputs)
        WaitsFor[V] = *Product;
      continue;
    }
    if (Error E = select(I))
      return E;
    if (Error E = flush(I))
      return E;
  }
  // Pending nodes whose product never came (none in a well-formed graph).
  for (auto &[Product, Nodes] : Pending)
    if (Error E = flush(Product))
      return E;
  if (G.Loss != NoValue)
    P.Training.LossValue = P.ValueOf[G.Loss];
  if (ConstantError)
    return std::move(ConstantError);
  return std::move(P);
}

/// A hash of the size and of up to 64 spread windows of 64 bytes: enough
/// to tell constants apart (equal ones are compared whole), without
/// reading every byte of each layer's tables.
uint64_t sampledHash(ArrayRef<uint8_t> Bytes) {
  uint64_t Size = Bytes.size();
  uint64_t H = plan::fnv1a(reinterpret_cast<const uint8_t *>(&Size),
                           sizeof(Size));
  constexpr size_t Window = 64, Windows = 64;
  if (Bytes.size() <= Window * Windows)
    return plan::fnv1a(Bytes.data(), Bytes.size(), H);
  size_t Step = (Bytes.size() - Window) / (Windows - 1);
  for (size_t K = 0; K < Windows; ++K)
    H = plan::fnv1a(Bytes.data() + K * Step, Window, H);
  return H;
}

const Loc &Selector::loc(ValueId V) {
  if (Locs[V].valid() || G.Values[V].Kind != ValueKind::Constant)
    return Locs[V];
  // A constant a kernel reads (shape and axis inputs of views are read at
  // plan time, and never get storage).
  const Value &X = G.Values[V];
  DType T = X.isFloat() ? DType::F32 : typeOf(V);
  if (!X.Data) {
    uint32_t Id = newValue(X.Name, plan::ValueKind::Constant, T,
                           uint64_t(numel(X.Dims)));
    Locs[V] = {Id, 0, contiguousStrides(X.Dims)};
    P.ValueOf[V] = Id;
    P.Training.Missing.push_back(
        "'" + X.Name + "', a buffer of the model whose data the ONNX "
                       "file does not carry");
    return Locs[V];
  }
  // Identical constants share one value: found by their stored elements
  // before any conversion where they are contiguous, by their bytes after.
  auto Reuse = [&](std::multimap<uint64_t, ValueId> &By, uint64_t Hash,
                   auto Same) {
    for (auto [It, End] = By.equal_range(Hash); It != End; ++It)
      if (G.Values[It->second].Dims == X.Dims &&
          P.Values[Locs[It->second].Value].Type == T && Same(It->second)) {
        Locs[V] = Locs[It->second];
        P.ValueOf[V] = Locs[V].Value;
        return true;
      }
    return false;
  };
  ArrayRef<uint8_t> Stored = X.Data->storageBytes();
  uint64_t StoredHash = sampledHash(Stored);
  if (!Stored.empty() &&
      Reuse(ConstantsByStorage, StoredHash, [&](ValueId Other) {
        return G.Values[Other].Data->type() == X.Data->type() &&
               G.Values[Other].Data->storageBytes() == Stored;
      }))
    return Locs[V];
  plan::Constant C;
  C.Bytes.resize(size_t(numel(X.Dims)) * plan::dtypeBytes(T));
  std::vector<double> Elems = X.Data->values();
  for (size_t K = 0; K < Elems.size(); ++K) {
    if (T == DType::F32) {
      float F = float(Elems[K]);
      std::memcpy(&C.Bytes[K * 4], &F, 4);
    } else if (T == DType::I32) {
      if ((Elems[K] > 2147483647.0 || Elems[K] < -2147483648.0) &&
          !ConstantError)
        ConstantError = createStringError(
            inconvertibleErrorCode(),
            "constant '%s', read at run time, holds a value beyond int32",
            X.Name.c_str());
      int32_t I = int32_t(Elems[K]);
      std::memcpy(&C.Bytes[K * 4], &I, 4);
    } else {
      C.Bytes[K] = uint8_t(Elems[K] != 0);
    }
  }
  uint64_t BytesHash = sampledHash(C.Bytes);
  if (Reuse(ConstantsByBytes, BytesHash, [&](ValueId Other) {
        const plan::Value &O = P.Values[Locs[Other].Value];
        return P.Constants[O.Constant].Bytes == C.Bytes;
      }))
    return Locs[V];
  if (!Stored.empty())
    ConstantsByStorage.insert({StoredHash, V});
  ConstantsByBytes.insert({BytesHash, V});
  uint32_t Id = newValue(X.Name, plan::ValueKind::Constant, T,
                         uint64_t(numel(X.Dims)));
  Locs[V] = {Id, 0, contiguousStrides(X.Dims)};
  P.ValueOf[V] = Id;
  C.Value = Id;
  P.Values[Id].Constant = uint32_t(P.Constants.size());
  P.Constants.push_back(std::move(C));
  return Locs[V];
}

} // namespace

Expected<KernelProgram> selectKernels(const Graph &G,
                                      const KernelOptions &Options) {
  Expected<KernelProgram> P = Selector(G, Options).run();
  if (P && Options.ElideCopies)
    elideCopies(*P);
  if (P && Options.FuseResidualNorms)
    fuseResidualNorms(*P, /*Forward=*/!Options.CheckpointLayers);
  if (P && Options.FusePointwise)
    fusePointwiseChains(*P, /*Forward=*/!Options.CheckpointLayers);
  if (P && Options.AccumulateProducts)
    accumulateProducts(*P);
  return P;
}

} // namespace dsc::compute
