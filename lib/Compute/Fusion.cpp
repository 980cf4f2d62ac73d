//===- Fusion.cpp - The exporters' decompositions, back into one op -------===//
//
// torch.onnx writes attention, RMSNorm, rotary embeddings, SwiGLU and
// GELU as chains of small ops.
// Each pass here finds such a chain by walking up from its last node and
// replaces the last node's output with one fused operator; the chain's
// other nodes fall away when nothing else reads them. A chain that does not
// match exactly is left alone: it still trains, op by op.
//
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Ops.h"
#include "dsc/Compute/Passes.h"

#include <cmath>

#include <map>

using namespace llvm;

namespace dsc::compute {

namespace {

/// Reading a graph: the live node producing a value, known scalars, and
/// products of factors.
class Matcher {
public:
  explicit Matcher(Graph &G) : G(G) {}

  const Node *producer(ValueId V, StringRef Op = "") const {
    if (V == NoValue)
      return nullptr;
    int32_t P = G.Values[V].Producer;
    if (P < 0 || G.Nodes[P].Dead)
      return nullptr;
    const Node &N = G.Nodes[P];
    return Op.empty() || N.Op == Op ? &N : nullptr;
  }
  std::optional<double> scalar(ValueId V) const {
    if (V == NoValue)
      return std::nullopt;
    const Value &X = G.Values[V];
    if (!X.known() || X.Data->numel() != 1)
      return std::nullopt;
    return X.Data->at(0);
  }
  /// Splits V into the factors of a tree of Mul (and Div by a constant)
  /// nodes: the non-constant factors, and the product of the constants.
  void factors(ValueId V, std::vector<ValueId> &Terms, double &Constant,
               unsigned Depth = 0) const {
    if (std::optional<double> C = scalar(V)) {
      Constant *= *C;
      return;
    }
    const Node *N = producer(V);
    if (N && Depth < 6 && N->Op == "Mul") {
      factors(N->Inputs[0], Terms, Constant, Depth + 1);
      factors(N->Inputs[1], Terms, Constant, Depth + 1);
      return;
    }
    if (N && Depth < 6 && N->Op == "Div")
      if (std::optional<double> C = scalar(N->Inputs[1]); C && *C != 0) {
        factors(N->Inputs[0], Terms, Constant, Depth + 1);
        Constant /= *C;
        return;
      }
    Terms.push_back(V);
  }
  /// For V = Add(A, B) with B (or A) the scalar C: the other operand.
  ValueId plusConstant(ValueId V, double C) const {
    const Node *N = producer(V, "Add");
    if (!N)
      return NoValue;
    for (int K = 0; K < 2; ++K)
      if (std::optional<double> S = scalar(N->Inputs[1 - K]);
          S && std::fabs(*S - C) <= 1e-6 * std::max(1.0, std::fabs(C)))
        return N->Inputs[K];
    return NoValue;
  }

  Graph &G;
};

bool near(double A, double B, double Rel = 1e-4) {
  return std::fabs(A - B) <= Rel * std::max(std::fabs(A), std::fabs(B));
}

/// Replaces the value Old with the first output of a new fused node placed
/// where Old's producer was.
Error replaceWith(Graph &G, ValueId Old, StringRef Op,
                  std::vector<ValueId> Ins, Attributes A, unsigned Outputs) {
  const Node &Root = G.Nodes[G.Values[Old].Producer];
  std::string Name = Root.Name, Scope = Root.Scope;
  double Order = Root.Order;
  Expected<std::vector<ValueId>> Out =
      G.addNode(Op, std::move(Ins), std::move(A), Outputs, Name + ".fused",
                Scope, Order);
  if (!Out)
    return Out.takeError();
  G.replaceAllUses(Old, (*Out)[0]);
  G.Nodes[G.Values[Old].Producer].Dead = true;
  return Error::success();
}

Error finish(Graph &G) {
  G.removeDeadNodes();
  return G.sortNodes();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// T with its last two dims swapped back: the X that T transposes (by a
/// Transpose whose last two axes are X's last two swapped, or the way
/// torch writes it: reshape to 3-D, transpose, reshape back), or a new
/// Transpose of a Transpose's input; NoValue when T is not a transpose.
ValueId untransposed(Matcher &M, ValueId T, const Node &Root) {
  const Shape &S = M.G.Values[T].Dims;
  size_t R = S.size();
  if (const Node *N = M.producer(T, "Transpose")) {
    std::vector<int64_t> P = N->A.ints("perm").value_or(std::vector<int64_t>());
    if (P.size() != R)
      return NoValue;
    std::swap(P[R - 2], P[R - 1]);
    bool Identity = true;
    for (size_t K = 0; K < R; ++K)
      Identity &= P[K] == int64_t(K);
    ValueId X = N->Inputs[0];
    if (Identity)
      return X;
    Attributes A;
    A.set("perm", P);
    Expected<std::vector<ValueId>> Out =
        M.G.addNode("Transpose", {X}, A, 1, Root.Name + ".k", Root.Scope,
                    Root.Order);
    if (!Out) {
      consumeError(Out.takeError());
      return NoValue;
    }
    return (*Out)[0];
  }
  const Node *Outer = M.producer(T, "Reshape");
  const Node *Mid = Outer ? M.producer(Outer->Inputs[0], "Transpose") : nullptr;
  const Node *Inner = Mid ? M.producer(Mid->Inputs[0], "Reshape") : nullptr;
  if (!Inner)
    return NoValue;
  ValueId X = Inner->Inputs[0];
  const Shape &XS = M.G.Values[X].Dims;
  const Shape &MS = M.G.Values[Mid->Inputs[0]].Dims;
  std::vector<int64_t> P =
      Mid->A.ints("perm").value_or(std::vector<int64_t>());
  if (XS.size() != R || MS.size() != 3 || P != std::vector<int64_t>{0, 2, 1} ||
      MS[1] != XS[R - 2] || MS[2] != XS[R - 1] || S[R - 2] != XS[R - 1] ||
      S[R - 1] != XS[R - 2] ||
      !std::equal(S.begin(), S.end() - 2, XS.begin()))
    return NoValue;
  return X;
}

/// If V [B, Hkv*G, T, D] repeats the heads of K [B, Hkv, T, D] G times
/// (Unsqueeze, Expand, Reshape: grouped-query attention), K; else V.
ValueId unrepeated(const Matcher &M, ValueId V) {
  const Node *R = M.producer(V, "Reshape");
  const Node *E = R ? M.producer(R->Inputs[0], "Expand") : nullptr;
  const Node *U = E ? M.producer(E->Inputs[0], "Unsqueeze") : nullptr;
  if (!U)
    return V;
  ValueId K = U->Inputs[0];
  const Shape &KS = M.G.Values[K].Dims, &US = M.G.Values[U->Outputs[0]].Dims,
              &ES = M.G.Values[E->Outputs[0]].Dims, &VS = M.G.Values[V].Dims;
  if (KS.size() != 4 || US.size() != 5 || US[2] != 1 || ES.size() != 5 ||
      ES[0] != KS[0] || ES[1] != KS[1] || ES[3] != KS[2] || ES[4] != KS[3] ||
      VS != Shape{KS[0], KS[1] * ES[2], KS[2], KS[3]})
    return V;
  return K;
}

enum class MaskKind { None, Causal, Other };

/// What an additive mask broadcast to [B, H, T, S] does.
MaskKind classifyMask(const HostTensor &M, const Shape &Scores) {
  HostTensor X = M.expanded(Scores);
  int64_t T = Scores[2], S = Scores[3];
  bool Zero = true, Causal = true;
  // Broadcast dims are checked once.
  int64_t Bs = X.strides()[0] ? Scores[0] : 1,
          Hs = X.strides()[1] ? Scores[1] : 1;
  for (int64_t B = 0; B < Bs; ++B)
    for (int64_t H = 0; H < Hs; ++H)
      for (int64_t I = 0; I < T; ++I)
        for (int64_t J = 0; J < S; ++J) {
          int64_t Index[4] = {B, H, I, J};
          double V = X.at(Index);
          Zero &= V == 0;
          Causal &= J <= I ? V == 0 : V <= -1e30;
          if (!Zero && !Causal)
            return MaskKind::Other;
        }
  return Zero ? MaskKind::None : Causal ? MaskKind::Causal : MaskKind::Other;
}

/// Every layer adds the same mask: it is classified once.
using MaskKinds = std::map<std::pair<const HostTensor *, Shape>, MaskKind>;

Error fuseOneAttention(Graph &G, uint32_t Index, bool &Fused,
                       MaskKinds &Kinds) {
  Matcher M(G);
  const Node &PV = G.Nodes[Index];
  ValueId Out = PV.Outputs[0];
  const Node *Soft = M.producer(PV.Inputs[0], "Softmax");
  if (!Soft || G.Values[Out].Dims.size() != 4 ||
      Soft->A.i("axis", -1) != int64_t(G.Values[Soft->Outputs[0]].Dims.size()) - 1)
    return Error::success();
  ValueId Scores = Soft->Inputs[0];
  ValueId Bias = NoValue;
  // Scores + mask, the mask a known constant.
  if (const Node *Add = M.producer(Scores, "Add")) {
    for (int K = 0; K < 2; ++K)
      if (G.Values[Add->Inputs[1 - K]].known() &&
          G.Values[Add->Inputs[1 - K]].Data->numel() > 1) {
        Bias = Add->Inputs[1 - K];
        Scores = Add->Inputs[K];
        break;
      }
  }
  // Scale factors anywhere in the product of the two operands.
  std::vector<ValueId> Terms;
  double Scale = 1;
  M.factors(Scores, Terms, Scale);
  if (Terms.size() != 1)
    return Error::success();
  const Node *QK = M.producer(Terms[0], "MatMul");
  if (!QK)
    return Error::success();
  std::vector<ValueId> QT, KT;
  M.factors(QK->Inputs[0], QT, Scale);
  M.factors(QK->Inputs[1], KT, Scale);
  if (QT.size() != 1 || KT.size() != 1)
    return Error::success();
  Node Root = PV; // A copy: untransposed may add nodes.
  ValueId Q = QT[0], K = untransposed(M, KT[0], Root), V = Root.Inputs[1];
  if (K == NoValue)
    return Error::success();
  const Shape &QS = G.Values[Q].Dims, &KS = G.Values[K].Dims,
              &VS = G.Values[V].Dims;
  if (QS.size() != 4 || KS.size() != 4 || VS.size() != 4 || KS != Shape{QS[0], QS[1], KS[2], QS[3]} ||
      VS[0] != QS[0] || VS[1] != QS[1] || VS[2] != KS[2])
    return Error::success();
  K = unrepeated(M, K);
  V = unrepeated(M, V);
  const Shape &KS2 = G.Values[K].Dims, &VS2 = G.Values[V].Dims;
  if (KS2[1] != VS2[1])
    return Error::success(); // K and V must share their heads.
  Attributes A;
  A.setFloat("scale", Scale);
  std::vector<ValueId> Ins = {Q, K, V};
  if (Bias != NoValue) {
    Shape Sc = {QS[0], QS[1], QS[2], KS[2]};
    if (!broadcastShapes(G.Values[Bias].Dims, Sc) ||
        *broadcastShapes(G.Values[Bias].Dims, Sc) != Sc)
      return Error::success();
    const HostTensor *Mask = G.Values[Bias].Data.get();
    auto [It, New] = Kinds.insert({{Mask, Sc}, MaskKind::None});
    if (New)
      It->second = classifyMask(*Mask, Sc);
    switch (It->second) {
    case MaskKind::None:
      break;
    case MaskKind::Causal:
      A.set("causal", 1);
      break;
    case MaskKind::Other:
      Ins.push_back(Bias);
      break;
    }
  }
  if (Error E = replaceWith(G, Out, "dsc.Attention", Ins, A, 2))
    return E;
  Fused = true;
  return Error::success();
}

} // namespace

Error fuseAttention(Graph &G, const PipelineOptions &) {
  bool Any = false;
  MaskKinds Kinds;
  for (uint32_t I = 0, E = G.Nodes.size(); I < E; ++I)
    if (!G.Nodes[I].Dead && G.Nodes[I].Op == "MatMul")
      if (Error Err = fuseOneAttention(G, I, Any, Kinds))
        return Err;
  return Any ? finish(G) : Error::success();
}

//===----------------------------------------------------------------------===//
// RMSNorm: w * (x * 1/sqrt(mean(x^2) + eps)), or x / sqrt(...) * w
//===----------------------------------------------------------------------===//

namespace {

/// If V = mean(x^2) over the last axis, x.
ValueId meanSquareOf(const Matcher &M, ValueId V) {
  const Node *Mean = M.producer(V, "ReduceMean");
  if (!Mean)
    return NoValue;
  const Shape &In = M.G.Values[Mean->Inputs[0]].Dims;
  std::vector<int64_t> Axes = *Mean->A.ints("axes");
  if (Axes != std::vector<int64_t>{int64_t(In.size()) - 1} ||
      !Mean->A.i("keepdims", 1))
    return NoValue;
  ValueId Sq = Mean->Inputs[0];
  if (const Node *P = M.producer(Sq, "Pow")) {
    std::optional<double> E = M.scalar(P->Inputs[1]);
    return E && *E == 2 ? P->Inputs[0] : NoValue;
  }
  if (const Node *P = M.producer(Sq, "Mul"))
    return P->Inputs[0] == P->Inputs[1] ? P->Inputs[0] : NoValue;
  return NoValue;
}

/// If V = sqrt(mean(x^2) + eps): x and eps.
std::pair<ValueId, double> rmsOf(const Matcher &M, ValueId V) {
  const Node *S = M.producer(V, "Sqrt");
  if (!S)
    return {NoValue, 0};
  ValueId Inner = S->Inputs[0];
  double Eps = 0;
  if (const Node *A = M.producer(Inner, "Add"))
    for (int K = 0; K < 2; ++K)
      if (std::optional<double> C = M.scalar(A->Inputs[1 - K])) {
        Eps = *C;
        Inner = A->Inputs[K];
        break;
      }
  return {meanSquareOf(M, Inner), Eps};
}

} // namespace

Error fuseRMSNorm(Graph &G, const PipelineOptions &) {
  Matcher M(G);
  bool Any = false;
  for (uint32_t I = 0, E = G.Nodes.size(); I < E; ++I) {
    const Node &N = G.Nodes[I];
    if (N.Dead || N.Op != "Mul")
      continue;
    std::vector<ValueId> Terms;
    double C = 1;
    M.factors(N.Outputs[0], Terms, C);
    // Terms: x, the weight, and 1/rms (Reciprocal) -- or (x / rms) as one
    // Div term beside the weight.
    ValueId W = NoValue, X = NoValue, Root = NoValue;
    unsigned Others = 0;
    for (ValueId T : Terms) {
      const Value &V = G.Values[T];
      if (V.Kind == ValueKind::Param && V.Dims.size() == 1) {
        W = T;
      } else if (const Node *R = M.producer(T, "Reciprocal")) {
        Root = R->Inputs[0];
      } else if (const Node *D = M.producer(T, "Div");
                 D && !M.scalar(D->Inputs[1])) {
        X = D->Inputs[0];
        Root = D->Inputs[1];
      } else {
        X = T;
        ++Others;
      }
    }
    if (W == NoValue || X == NoValue || Root == NoValue || Others > 1 ||
        C != 1 || Terms.size() > 3)
      continue;
    auto [Of, Eps] = rmsOf(M, Root);
    const Shape &XS = G.Values[X].Dims;
    if (Of != X || XS.empty() || G.Values[W].Dims[0] != XS.back())
      continue;
    Attributes A;
    A.set("axis", -1).setFloat("epsilon", Eps);
    if (Error Err = replaceWith(G, N.Outputs[0], "dsc.RMSNorm", {X, W}, A, 2))
      return Err;
    Any = true;
  }
  return Any ? finish(G) : Error::success();
}

//===----------------------------------------------------------------------===//
// Rotary position embeddings: x * cos + rotate_half(x) * sin, where
// rotate_half(x) = concat(-x[..., h:], x[..., :h]) and h is half the last
// dim (HF's apply_rotary_pos_emb), with cos and sin constant tables.
//===----------------------------------------------------------------------===//

namespace {

/// For V = Slice(X) of elements [Start, Start + Count) of X's last axis in
/// steps of 1: X; else NoValue.
ValueId lastAxisSlice(const Matcher &M, ValueId V, int64_t Start,
                      int64_t Count) {
  const Node *S = M.producer(V, "Slice");
  if (!S)
    return NoValue;
  std::optional<std::vector<int64_t>> Axes = S->A.ints("dsc_axes"),
                                      Starts = S->A.ints("dsc_starts"),
                                      Steps = S->A.ints("dsc_steps"),
                                      Counts = S->A.ints("dsc_counts");
  int64_t Rank = int64_t(M.G.Values[S->Inputs[0]].Dims.size());
  if (!Axes || Axes->size() != 1 || (*Axes)[0] != Rank - 1 ||
      (*Starts)[0] != Start || (*Steps)[0] != 1 || (*Counts)[0] != Count)
    return NoValue;
  return S->Inputs[0];
}

/// For V = Concat(Neg(X[..., h:]), X[..., :h]) on the last axis: X.
ValueId rotateHalfOf(const Matcher &M, ValueId V) {
  const Node *C = M.producer(V, "Concat");
  if (!C || C->Inputs.size() != 2)
    return NoValue;
  const Shape &Out = M.G.Values[V].Dims;
  int64_t Rank = int64_t(Out.size()), Axis = C->A.i("axis", 0);
  if (Axis < 0)
    Axis += Rank;
  if (Rank == 0 || Axis != Rank - 1 || Out.back() % 2)
    return NoValue;
  int64_t H = Out.back() / 2;
  const Node *Negated = M.producer(C->Inputs[0], "Neg");
  if (!Negated)
    return NoValue;
  ValueId X = lastAxisSlice(M, Negated->Inputs[0], H, H);
  if (X == NoValue || lastAxisSlice(M, C->Inputs[1], 0, H) != X ||
      M.G.Values[X].Dims != Out)
    return NoValue;
  return X;
}

/// A constant table that broadcasts to X's shape.
bool isTable(const Graph &G, ValueId T, const Shape &X) {
  if (T == NoValue || !G.Values[T].known() || !G.Values[T].isFloat())
    return false;
  std::optional<Shape> B = broadcastShapes(G.Values[T].Dims, X);
  return B && *B == X;
}

} // namespace

Error fuseRotary(Graph &G, const PipelineOptions &) {
  Matcher M(G);
  bool Any = false;
  for (uint32_t I = 0, E = G.Nodes.size(); I < E; ++I) {
    const Node &N = G.Nodes[I];
    if (N.Dead || N.Op != "Add")
      continue;
    ValueId Out = N.Outputs[0], X = NoValue, Cos = NoValue, Sin = NoValue;
    // Either addend may be the rotated one, and either factor the table.
    for (int K = 0; K < 2 && X == NoValue; ++K) {
      const Node *Plain = M.producer(N.Inputs[K], "Mul");
      const Node *Rotated = M.producer(N.Inputs[1 - K], "Mul");
      if (!Plain || !Rotated)
        continue;
      for (int A = 0; A < 2 && X == NoValue; ++A)
        for (int B = 0; B < 2 && X == NoValue; ++B) {
          ValueId Half = rotateHalfOf(M, Rotated->Inputs[B]);
          if (Half != NoValue && Plain->Inputs[A] == Half) {
            X = Half;
            Cos = Plain->Inputs[1 - A];
            Sin = Rotated->Inputs[1 - B];
          }
        }
    }
    if (X == NoValue)
      continue;
    const Shape &XS = G.Values[X].Dims;
    if (G.Values[Out].Dims != XS || !isTable(G, Cos, XS) ||
        !isTable(G, Sin, XS))
      continue;
    if (Error Err = replaceWith(G, Out, "dsc.Rotary", {X, Cos, Sin}, {}, 1))
      return Err;
    Any = true;
  }
  return Any ? finish(G) : Error::success();
}

//===----------------------------------------------------------------------===//
// SwiGLU's gate: silu(g) * u with silu(g) = g * sigmoid(g) (HF's LlamaMLP,
// act_fn(gate_proj(x)) * up_proj(x)), either operand order.
//===----------------------------------------------------------------------===//

Error fuseSwiGLU(Graph &G, const PipelineOptions &) {
  Matcher M(G);
  bool Any = false;
  for (uint32_t I = 0, E = G.Nodes.size(); I < E; ++I) {
    const Node &N = G.Nodes[I];
    if (N.Dead || N.Op != "Mul")
      continue;
    ValueId Gate = NoValue, Up = NoValue;
    for (int K = 0; K < 2 && Gate == NoValue; ++K) {
      const Node *Silu = M.producer(N.Inputs[K], "Mul");
      for (int J = 0; Silu && J < 2 && Gate == NoValue; ++J) {
        const Node *S = M.producer(Silu->Inputs[1 - J], "Sigmoid");
        if (S && S->Inputs[0] == Silu->Inputs[J]) {
          Gate = Silu->Inputs[J];
          Up = N.Inputs[1 - K];
        }
      }
    }
    // Elementwise over one shape: a broadcast operand stays op by op.
    if (Gate == NoValue || !G.Values[Gate].isFloat() ||
        !G.Values[Up].isFloat() || G.Values[Gate].Dims != G.Values[Up].Dims ||
        G.Values[N.Outputs[0]].Dims != G.Values[Gate].Dims)
      continue;
    if (Error Err = replaceWith(G, N.Outputs[0], "dsc.SwiGLU", {Gate, Up}, {}, 1))
      return Err;
    Any = true;
  }
  return Any ? finish(G) : Error::success();
}

//===----------------------------------------------------------------------===//
// GELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), 0.5 x (1 + erf(x /
// sqrt 2))
//===----------------------------------------------------------------------===//

namespace {

constexpr double Pi = 3.14159265358979323846;

/// If V is the argument of tanh in the tanh form for x, true.
bool isTanhArgument(const Matcher &M, ValueId V, ValueId X) {
  std::vector<ValueId> Terms;
  double C = 1;
  M.factors(V, Terms, C);
  if (Terms.size() != 1 || !near(C, std::sqrt(2 / Pi)))
    return false;
  const Node *Sum = M.producer(Terms[0], "Add");
  if (!Sum)
    return false;
  for (int K = 0; K < 2; ++K) {
    if (Sum->Inputs[K] != X)
      continue;
    std::vector<ValueId> Cube;
    double D = 1;
    M.factors(Sum->Inputs[1 - K], Cube, D);
    if (!near(D, 0.044715))
      continue;
    if (Cube.size() == 1)
      if (const Node *P = M.producer(Cube[0], "Pow"))
        if (P->Inputs[0] == X && M.scalar(P->Inputs[1]) == 3.0)
          return true;
    if (Cube.size() == 3 && Cube[0] == X && Cube[1] == X && Cube[2] == X)
      return true;
  }
  return false;
}

} // namespace

Error fuseGelu(Graph &G, const PipelineOptions &) {
  Matcher M(G);
  bool Any = false;
  for (uint32_t I = 0, E = G.Nodes.size(); I < E; ++I) {
    const Node &N = G.Nodes[I];
    if (N.Dead || N.Op != "Mul")
      continue;
    std::vector<ValueId> Terms;
    double C = 1;
    M.factors(N.Outputs[0], Terms, C);
    if (Terms.size() != 2 || !near(C, 0.5))
      continue;
    for (int K = 0; K < 2; ++K) {
      ValueId X = Terms[K];
      ValueId Inner = M.plusConstant(Terms[1 - K], 1.0);
      if (Inner == NoValue)
        continue;
      std::string Form;
      if (const Node *T = M.producer(Inner, "Tanh")) {
        if (isTanhArgument(M, T->Inputs[0], X))
          Form = "tanh";
      } else if (const Node *Er = M.producer(Inner, "Erf")) {
        std::vector<ValueId> Arg;
        double D = 1;
        M.factors(Er->Inputs[0], Arg, D);
        if (Arg.size() == 1 && Arg[0] == X && near(D, 1 / std::sqrt(2.0)))
          Form = "none";
      }
      if (Form.empty())
        continue;
      Attributes A;
      A.setString("approximate", Form);
      if (Error Err = replaceWith(G, N.Outputs[0], "Gelu", {X}, A, 1))
        return Err;
      Any = true;
      break;
    }
  }
  return Any ? finish(G) : Error::success();
}

} // namespace dsc::compute
