//===- Shapes.cpp ---------------------------------------------------------===//

#include "dsc/Graph/Shapes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

#include <cstring>

using namespace llvm;

namespace dsc {

//===----------------------------------------------------------------------===//
// Dimension expressions
//===----------------------------------------------------------------------===//

namespace {

/// Recursive descent over + - * / // ( ) integers and identifiers.
class DimExpr {
public:
  DimExpr(StringRef Text, const DimBindings &B) : Text(Text), B(B) {}

  std::optional<int64_t> parse() {
    std::optional<int64_t> V = sum();
    skip();
    if (Pos != Text.size())
      return std::nullopt;
    return V;
  }

private:
  void skip() {
    while (Pos < Text.size() && Text[Pos] == ' ')
      ++Pos;
  }
  bool eat(StringRef S) {
    skip();
    if (!Text.substr(Pos).startswith(S))
      return false;
    Pos += S.size();
    return true;
  }
  std::optional<int64_t> sum() {
    std::optional<int64_t> V = product();
    while (V) {
      if (eat("+")) {
        std::optional<int64_t> R = product();
        V = R ? std::optional<int64_t>(*V + *R) : std::nullopt;
      } else if (eat("-")) {
        std::optional<int64_t> R = product();
        V = R ? std::optional<int64_t>(*V - *R) : std::nullopt;
      } else {
        break;
      }
    }
    return V;
  }
  std::optional<int64_t> product() {
    std::optional<int64_t> V = atom();
    while (V) {
      if (eat("//") || eat("/")) {
        std::optional<int64_t> R = atom();
        V = R && *R ? std::optional<int64_t>(*V / *R) : std::nullopt;
      } else if (eat("*")) {
        std::optional<int64_t> R = atom();
        V = R ? std::optional<int64_t>(*V * *R) : std::nullopt;
      } else {
        break;
      }
    }
    return V;
  }
  std::optional<int64_t> atom() {
    skip();
    if (eat("(")) {
      std::optional<int64_t> V = sum();
      return eat(")") ? V : std::nullopt;
    }
    size_t Start = Pos;
    if (Pos < Text.size() && isDigit(Text[Pos])) {
      while (Pos < Text.size() && isDigit(Text[Pos]))
        ++Pos;
      int64_t V;
      if (Text.slice(Start, Pos).getAsInteger(10, V))
        return std::nullopt;
      return V;
    }
    while (Pos < Text.size() && (isAlnum(Text[Pos]) || Text[Pos] == '_'))
      ++Pos;
    if (Start == Pos)
      return std::nullopt;
    auto It = B.find(Text.slice(Start, Pos).str());
    if (It == B.end())
      return std::nullopt;
    return It->second;
  }

  StringRef Text;
  const DimBindings &B;
  size_t Pos = 0;
};

} // namespace

std::optional<int64_t> evaluateDim(StringRef Expression,
                                   const DimBindings &Bindings) {
  return DimExpr(Expression, Bindings).parse();
}

std::optional<uint64_t> elementCount(const TensorType &T,
                                     const DimBindings &Bindings,
                                     std::vector<std::string> *Missing) {
  if (!T.Ranked)
    return std::nullopt;
  uint64_t N = 1;
  bool OK = true;
  for (const Dim &D : T.Shape) {
    if (D.known()) {
      N *= uint64_t(D.Value);
      continue;
    }
    std::optional<int64_t> V =
        D.Symbol.empty() ? std::nullopt : evaluateDim(D.Symbol, Bindings);
    if (V && *V >= 0) {
      N *= uint64_t(*V);
      continue;
    }
    OK = false;
    if (Missing && !D.Symbol.empty()) {
      // Record the bare symbols of the expression.
      StringRef S = D.Symbol;
      size_t I = 0;
      while (I < S.size()) {
        if (isAlpha(S[I]) || S[I] == '_') {
          size_t J = I;
          while (J < S.size() && (isAlnum(S[J]) || S[J] == '_'))
            ++J;
          std::string Sym = S.slice(I, J).str();
          if (!Bindings.count(Sym) && !is_contained(*Missing, Sym))
            Missing->push_back(Sym);
          I = J;
        } else {
          ++I;
        }
      }
    }
  }
  return OK ? std::optional<uint64_t>(N) : std::nullopt;
}

InputSymbols classifyInputSymbols(const Model &M) {
  InputSymbols Out;
  auto Add = [](std::vector<std::string> &V, const std::string &S) {
    if (!is_contained(V, S))
      V.push_back(S);
  };
  for (const ValueInfo &In : M.Inputs)
    for (size_t I = 0; I < In.Type.Shape.size(); ++I) {
      const std::string &S = In.Type.Shape[I].Symbol;
      if (S.empty() || In.Type.Shape[I].known())
        continue;
      std::string L = StringRef(S).lower();
      bool LooksBatch = StringRef(L).contains("batch") || L == "n" ||
                        L == "bs" || L == "b";
      bool LooksSeq = StringRef(L).contains("seq") || StringRef(L).contains("len") ||
                      L == "t" || L == "s" || StringRef(L).contains("token");
      if (LooksBatch || (I == 0 && !LooksSeq))
        Add(Out.Batch, S);
      else if (LooksSeq || I == 1)
        Add(Out.Sequence, S);
      else
        Add(Out.Other, S);
    }
  return Out;
}

//===----------------------------------------------------------------------===//
// dsc's own inference
//===----------------------------------------------------------------------===//

namespace {

/// The integer values of a small tensor, when they are in the proto.
std::optional<std::vector<int64_t>> tensorInts(const onnx::TensorProto &T) {
  std::vector<int64_t> Out;
  if (T.int64_data_size()) {
    Out.assign(T.int64_data().begin(), T.int64_data().end());
    return Out;
  }
  if (T.int32_data_size()) {
    Out.assign(T.int32_data().begin(), T.int32_data().end());
    return Out;
  }
  const std::string &Raw = T.raw_data();
  if (Raw.empty())
    return std::nullopt;
  if (T.data_type() == onnx::TensorProto_DataType_INT64) {
    for (size_t I = 0; I + 8 <= Raw.size(); I += 8) {
      int64_t V;
      std::memcpy(&V, Raw.data() + I, 8);
      Out.push_back(V);
    }
    return Out;
  }
  if (T.data_type() == onnx::TensorProto_DataType_INT32) {
    for (size_t I = 0; I + 4 <= Raw.size(); I += 4) {
      int32_t V;
      std::memcpy(&V, Raw.data() + I, 4);
      Out.push_back(V);
    }
    return Out;
  }
  return std::nullopt;
}

TensorType typeOfTensorProto(const onnx::TensorProto &T) {
  TensorType Out;
  Out.Type = dtypeFromOnnx(T.data_type());
  Out.Ranked = true;
  for (int64_t D : T.dims())
    Out.Shape.push_back(Dim::of(D));
  return Out;
}

class Inferrer {
public:
  Inferrer(const Model &M, StringMap<TensorType> &Types) : M(M), Types(Types) {
    for (const Node &N : M.Nodes)
      if (N.OpType == "Constant" && !N.Outputs.empty())
        if (const onnx::AttributeProto *A = attribute(N, "value"))
          if (A->has_t())
            ConstantValues[N.Outputs[0]] = &A->t();
    if (M.Proto)
      for (const onnx::TensorProto &T : M.Proto->graph().initializer())
        ConstantValues[T.name()] = &T;
  }

  /// Infers N's outputs that are still unknown; true if it set any.
  bool infer(const Node &N);

private:
  /// Tracks the values of small integer tensors (shapes and their
  /// arithmetic) as dims, so that a Reshape's target computed from Shape
  /// ops is known symbolically: [batch, sequence, 4, 16].
  void inferValue(const Node &N);
  std::optional<std::vector<Dim>> valueOf(const Node &N, unsigned I) const {
    if (I >= N.Inputs.size() || N.Inputs[I].empty())
      return std::nullopt;
    auto It = Values.find(N.Inputs[I]);
    if (It != Values.end())
      return It->second;
    if (std::optional<std::vector<int64_t>> C = constInts(N, I)) {
      std::vector<Dim> Out;
      for (int64_t V : *C)
        Out.push_back(Dim::of(V));
      return Out;
    }
    return std::nullopt;
  }

  const TensorType *in(const Node &N, unsigned I) const {
    if (I >= N.Inputs.size() || N.Inputs[I].empty())
      return nullptr;
    auto It = Types.find(N.Inputs[I]);
    return It == Types.end() ? nullptr : &It->second;
  }
  std::optional<std::vector<int64_t>> constInts(const Node &N,
                                                unsigned I) const {
    if (I >= N.Inputs.size())
      return std::nullopt;
    auto It = ConstantValues.find(N.Inputs[I]);
    if (It == ConstantValues.end())
      return std::nullopt;
    return tensorInts(*It->second);
  }
  bool set(const Node &N, unsigned Out, TensorType T) {
    if (Out >= N.Outputs.size() || N.Outputs[Out].empty())
      return false;
    TensorType &Slot = Types[N.Outputs[Out]];
    if (Slot.Ranked) {
      // A declared shape may leave dims blank; fill those from inference.
      if (!T.Ranked || T.Shape.size() != Slot.Shape.size())
        return false;
      bool Filled = false;
      for (size_t I = 0; I < Slot.Shape.size(); ++I)
        if (!Slot.Shape[I].known() && Slot.Shape[I].Symbol.empty() &&
            (T.Shape[I].known() || !T.Shape[I].Symbol.empty())) {
          Slot.Shape[I] = T.Shape[I];
          Filled = true;
        }
      return Filled;
    }
    if (Slot.Type != DType::Undefined && T.Type == DType::Undefined)
      T.Type = Slot.Type;
    Slot = std::move(T);
    return true;
  }
  static TensorType broadcast(ArrayRef<const TensorType *> Ins, DType Type);
  static std::optional<int64_t> normAxis(int64_t Axis, size_t Rank) {
    if (Axis < 0)
      Axis += int64_t(Rank);
    if (Axis < 0 || Axis > int64_t(Rank))
      return std::nullopt;
    return Axis;
  }

  const Model &M;
  StringMap<TensorType> &Types;
  StringMap<const onnx::TensorProto *> ConstantValues;
  StringMap<std::vector<Dim>> Values;
};

/// Text of a dim for building expressions ("batch", "(sequence+1)", "64").
std::string dimText(const Dim &D) {
  if (D.known())
    return std::to_string(D.Value);
  if (D.Symbol.empty())
    return "";
  bool Simple =
      llvm::all_of(D.Symbol, [](char C) { return isAlnum(C) || C == '_'; });
  return Simple ? D.Symbol : "(" + D.Symbol + ")";
}

/// A op B on dims: computed when both are known, an expression otherwise.
Dim combine(const Dim &A, const Dim &B, char Op) {
  if (A.known() && B.known()) {
    switch (Op) {
    case '+':
      return Dim::of(A.Value + B.Value);
    case '-':
      return Dim::of(A.Value - B.Value);
    case '*':
      return Dim::of(A.Value * B.Value);
    case '/':
      return B.Value ? Dim::of(A.Value / B.Value) : Dim();
    }
  }
  if ((Op == '*' || Op == '/') && B.known() && B.Value == 1)
    return A;
  if (Op == '*' && A.known() && A.Value == 1)
    return B;
  if ((Op == '+' || Op == '-') && B.known() && B.Value == 0)
    return A;
  std::string L = dimText(A), R = dimText(B);
  if (L.empty() || R.empty())
    return Dim();
  return Dim::symbol(L + (Op == '/' ? "//" : std::string(1, Op)) + R);
}

/// Two dims that are certainly the same size.
bool sameDim(const Dim &A, const Dim &B) {
  return (A.known() && B.known() && A.Value == B.Value) ||
         (!A.known() && !B.known() && !A.Symbol.empty() &&
          A.Symbol == B.Symbol);
}

void Inferrer::inferValue(const Node &N) {
  if (N.Outputs.empty() || N.Outputs[0].empty())
    return;
  StringRef Op = N.OpType;
  const std::string &Out = N.Outputs[0];
  const TensorType *X = in(N, 0);
  if (Op == "Shape") {
    if (!X || !X->Ranked)
      return;
    int64_t Rank = int64_t(X->Shape.size());
    int64_t Start = intAttribute(N, "start").value_or(0);
    int64_t End = intAttribute(N, "end").value_or(Rank);
    Start = std::clamp<int64_t>(Start < 0 ? Start + Rank : Start, 0, Rank);
    End = std::clamp<int64_t>(End < 0 ? End + Rank : End, 0, Rank);
    Values[Out] = End > Start ? std::vector<Dim>(X->Shape.begin() + Start,
                                                 X->Shape.begin() + End)
                              : std::vector<Dim>();
    return;
  }
  if (Op == "Size") {
    if (!X || !X->Ranked)
      return;
    Dim P = Dim::of(1);
    for (const Dim &D : X->Shape)
      P = combine(P, D, '*');
    Values[Out] = {P};
    return;
  }
  if (Op == "Constant") {
    std::vector<Dim> V;
    if (const onnx::AttributeProto *A = attribute(N, "value"); A && A->has_t()) {
      std::optional<std::vector<int64_t>> C = tensorInts(A->t());
      if (!C)
        return;
      for (int64_t I : *C)
        V.push_back(Dim::of(I));
    } else if (std::optional<int64_t> I = intAttribute(N, "value_int")) {
      V.push_back(Dim::of(*I));
    } else if (std::optional<std::vector<int64_t>> Is =
                   intsAttribute(N, "value_ints")) {
      for (int64_t I : *Is)
        V.push_back(Dim::of(I));
    } else {
      return;
    }
    Values[Out] = V;
    return;
  }
  std::optional<std::vector<Dim>> A = valueOf(N, 0);
  if (!A)
    return;
  if (Op == "Identity" || Op == "Unsqueeze" || Op == "Squeeze" ||
      Op == "Cast" || Op == "CastLike" || Op == "Reshape" ||
      Op == "Flatten") {
    Values[Out] = *A;
    return;
  }
  if (Op == "Gather") {
    std::optional<std::vector<Dim>> Idx = valueOf(N, 1);
    if (!Idx || intAttribute(N, "axis").value_or(0) != 0)
      return;
    std::vector<Dim> V;
    for (const Dim &I : *Idx) {
      if (!I.known())
        return;
      int64_t K = I.Value < 0 ? I.Value + int64_t(A->size()) : I.Value;
      if (K < 0 || K >= int64_t(A->size()))
        return;
      V.push_back((*A)[K]);
    }
    Values[Out] = V;
    return;
  }
  if (Op == "Concat") {
    std::vector<Dim> V;
    for (unsigned I = 0; I < N.Inputs.size(); ++I) {
      std::optional<std::vector<Dim>> Part = valueOf(N, I);
      if (!Part)
        return;
      V.insert(V.end(), Part->begin(), Part->end());
    }
    Values[Out] = V;
    return;
  }
  if (Op == "Slice") {
    std::optional<std::vector<Dim>> Starts = valueOf(N, 1),
                                    Ends = valueOf(N, 2);
    if (!Starts || !Ends || Starts->size() != 1 || Ends->size() != 1 ||
        !(*Starts)[0].known() || !(*Ends)[0].known() || N.Inputs.size() > 4)
      return;
    int64_t Size = int64_t(A->size());
    int64_t S = (*Starts)[0].Value, E = (*Ends)[0].Value;
    S = std::clamp<int64_t>(S < 0 ? S + Size : S, 0, Size);
    E = std::clamp<int64_t>(E < 0 ? E + Size : E, 0, Size);
    Values[Out].assign(A->begin() + S, A->begin() + std::max(S, E));
    return;
  }
  static const char Ops[] = "+-*/";
  static const StringRef Names[] = {"Add", "Sub", "Mul", "Div"};
  for (unsigned K = 0; K < 4; ++K) {
    if (Op != Names[K])
      continue;
    std::optional<std::vector<Dim>> B = valueOf(N, 1);
    if (!B || (A->size() != B->size() && A->size() != 1 && B->size() != 1))
      return;
    size_t Len = std::max(A->size(), B->size());
    std::vector<Dim> V;
    for (size_t I = 0; I < Len; ++I)
      V.push_back(combine((*A)[A->size() == 1 ? 0 : I],
                          (*B)[B->size() == 1 ? 0 : I], Ops[K]));
    Values[Out] = V;
  }
}


TensorType Inferrer::broadcast(ArrayRef<const TensorType *> Ins, DType Type) {
  TensorType Out;
  Out.Type = Type;
  size_t Rank = 0;
  for (const TensorType *T : Ins) {
    if (!T || !T->Ranked)
      return Out;
    Rank = std::max(Rank, T->Shape.size());
  }
  Out.Ranked = true;
  Out.Shape.assign(Rank, Dim::of(1));
  for (const TensorType *T : Ins)
    for (size_t I = 0; I < T->Shape.size(); ++I) {
      Dim &D = Out.Shape[Rank - T->Shape.size() + I];
      const Dim &E = T->Shape[I];
      if (E.known() && E.Value == 1)
        continue;
      if (D.known() && D.Value == 1)
        D = E;
      else if (!D.known() && D.Symbol.empty())
        continue;
      else if (!(D.known() && E.known() && D.Value == E.Value) &&
               !(!D.known() && D.Symbol == E.Symbol))
        D = E.known() ? E : D; // Prefer the known size.
    }
  return Out;
}

bool Inferrer::infer(const Node &N) {
  inferValue(N);
  StringRef Op = N.OpType;
  const TensorType *X = in(N, 0);
  DType XT = X ? X->Type : DType::Undefined;

  static const StringRef SameShape[] = {
      "Relu",  "Gelu",     "Tanh",       "Sigmoid",   "Erf",      "Sqrt",
      "Reciprocal", "Neg", "Exp",        "Log",       "Abs",      "Cos",
      "Sin",   "Softmax",  "LogSoftmax", "Identity",  "LeakyRelu", "Elu",
      "Selu",  "Softplus", "HardSigmoid", "Trilu",    "CumSum",   "Sign",
      "Floor", "Ceil",     "Round",      "FastGelu",  "QuickGelu", "Mish",
      "HardSwish", "Celu", "ThresholdedRelu", "BatchNormalization",
      "LayerNormalization", "SimplifiedLayerNormalization",
      "RMSNormalization", "InstanceNormalization", "GroupNormalization",
      "ScatterND", "ScatterElements", "Clip", "Dropout", "BiasGelu"};
  if (is_contained(SameShape, Op)) {
    if (!X)
      return false;
    bool Any = set(N, 0, *X);
    if (Op == "Dropout" && X->Ranked) {
      TensorType Mask = *X;
      Mask.Type = DType::Bool;
      Any |= set(N, 1, Mask);
    }
    return Any;
  }
  if (Op == "IsNaN" || Op == "IsInf" || Op == "Not") {
    if (!X)
      return false;
    TensorType T = *X;
    T.Type = DType::Bool;
    return set(N, 0, T);
  }
  if (Op == "Cast") {
    if (!X)
      return false;
    TensorType T = *X;
    T.Type = dtypeFromOnnx(intAttribute(N, "to").value_or(0));
    return set(N, 0, T);
  }
  if (Op == "CastLike") {
    const TensorType *Like = in(N, 1);
    if (!X || !Like)
      return false;
    TensorType T = *X;
    T.Type = Like->Type;
    return set(N, 0, T);
  }
  static const StringRef Arith[] = {"Add", "Sub", "Mul", "Div", "Pow",
                                    "Max", "Min", "Mod", "Sum", "Mean",
                                    "PRelu", "BitShift"};
  static const StringRef Compare[] = {"Equal", "Less",  "Greater",
                                      "LessOrEqual", "GreaterOrEqual",
                                      "And",   "Or",    "Xor"};
  if (is_contained(Arith, Op) || is_contained(Compare, Op)) {
    SmallVector<const TensorType *, 3> Ins;
    for (unsigned I = 0; I < N.Inputs.size(); ++I)
      Ins.push_back(in(N, I));
    DType T = is_contained(Compare, Op) ? DType::Bool : XT;
    TensorType Out = broadcast(Ins, T);
    return Out.Ranked && set(N, 0, Out);
  }
  if (Op == "Where") {
    const TensorType *A = in(N, 1);
    TensorType Out = broadcast({X, A, in(N, 2)}, A ? A->Type : DType::Undefined);
    return Out.Ranked && set(N, 0, Out);
  }
  if (Op == "MatMul") {
    const TensorType *B = in(N, 1);
    if (!X || !B || !X->Ranked || !B->Ranked || X->Shape.empty() ||
        B->Shape.empty())
      return false;
    TensorType A2 = *X, B2 = *B;
    bool VecA = A2.Shape.size() == 1, VecB = B2.Shape.size() == 1;
    if (VecA)
      A2.Shape.insert(A2.Shape.begin(), Dim::of(1));
    if (VecB)
      B2.Shape.push_back(Dim::of(1));
    TensorType BatchA = A2, BatchB = B2;
    BatchA.Shape.resize(A2.Shape.size() - 2);
    BatchB.Shape.resize(B2.Shape.size() - 2);
    TensorType Out = broadcast({&BatchA, &BatchB}, XT);
    if (!VecA)
      Out.Shape.push_back(A2.Shape[A2.Shape.size() - 2]);
    if (!VecB)
      Out.Shape.push_back(B2.Shape.back());
    return set(N, 0, Out);
  }
  if (Op == "Gemm") {
    const TensorType *B = in(N, 1);
    if (!X || !B || X->Shape.size() != 2 || B->Shape.size() != 2)
      return false;
    bool TA = intAttribute(N, "transA").value_or(0), TB = intAttribute(N, "transB").value_or(0);
    TensorType Out;
    Out.Type = XT;
    Out.Ranked = true;
    Out.Shape = {X->Shape[TA ? 1 : 0], B->Shape[TB ? 0 : 1]};
    return set(N, 0, Out);
  }
  if (Op == "Transpose") {
    if (!X || !X->Ranked)
      return false;
    std::vector<int64_t> Perm = intsAttribute(N, "perm").value_or(std::vector<int64_t>());
    if (Perm.empty())
      for (int64_t I = int64_t(X->Shape.size()) - 1; I >= 0; --I)
        Perm.push_back(I);
    if (Perm.size() != X->Shape.size())
      return false;
    TensorType Out = *X;
    for (size_t I = 0; I < Perm.size(); ++I) {
      if (Perm[I] < 0 || size_t(Perm[I]) >= X->Shape.size())
        return false;
      Out.Shape[I] = X->Shape[Perm[I]];
    }
    return set(N, 0, Out);
  }
  if (Op == "Shape" || Op == "Size") {
    TensorType Out;
    Out.Type = DType::Int64;
    Out.Ranked = true;
    if (Op == "Shape") {
      if (!X || !X->Ranked)
        return false;
      int64_t Rank = int64_t(X->Shape.size());
      int64_t Start = intAttribute(N, "start").value_or(0);
      int64_t End = intAttribute(N, "end").value_or(Rank);
      if (Start < 0)
        Start += Rank;
      if (End < 0)
        End += Rank;
      Start = std::clamp<int64_t>(Start, 0, Rank);
      End = std::clamp<int64_t>(End, 0, Rank);
      Out.Shape = {Dim::of(std::max<int64_t>(0, End - Start))};
    }
    return set(N, 0, Out);
  }
  if (Op == "Constant") {
    if (const onnx::AttributeProto *A = attribute(N, "value"); A && A->has_t())
      return set(N, 0, typeOfTensorProto(A->t()));
    TensorType Out;
    Out.Ranked = true;
    if (attribute(N, "value_float"))
      Out.Type = DType::Float;
    else if (attribute(N, "value_int"))
      Out.Type = DType::Int64;
    else if (const onnx::AttributeProto *A = attribute(N, "value_ints")) {
      Out.Type = DType::Int64;
      Out.Shape = {Dim::of(A->ints_size())};
    } else if (const onnx::AttributeProto *A = attribute(N, "value_floats")) {
      Out.Type = DType::Float;
      Out.Shape = {Dim::of(A->floats_size())};
    } else {
      return false;
    }
    return set(N, 0, Out);
  }
  if (Op.startswith("Reduce") || Op == "ArgMax" || Op == "ArgMin") {
    if (!X || !X->Ranked)
      return false;
    std::optional<std::vector<int64_t>> Axes = intsAttribute(N, "axes");
    if (!Axes && N.Inputs.size() > 1)
      Axes = constInts(N, 1);
    if (Op == "ArgMax" || Op == "ArgMin")
      Axes = std::vector<int64_t>{intAttribute(N, "axis").value_or(0)};
    bool Keep = intAttribute(N, "keepdims").value_or(1);
    TensorType Out = *X;
    if (Op == "ArgMax" || Op == "ArgMin")
      Out.Type = DType::Int64;
    if (!Axes || Axes->empty()) {
      if (N.Inputs.size() > 1 && !Axes)
        return false;
      for (Dim &D : Out.Shape)
        D = Dim::of(1);
      if (!Keep)
        Out.Shape.clear();
      return set(N, 0, Out);
    }
    std::vector<bool> Reduced(X->Shape.size(), false);
    for (int64_t A : *Axes)
      if (std::optional<int64_t> Ax = normAxis(A, X->Shape.size());
          Ax && *Ax < int64_t(X->Shape.size()))
        Reduced[*Ax] = true;
    Out.Shape.clear();
    for (size_t I = 0; I < X->Shape.size(); ++I)
      if (!Reduced[I])
        Out.Shape.push_back(X->Shape[I]);
      else if (Keep)
        Out.Shape.push_back(Dim::of(1));
    return set(N, 0, Out);
  }
  if (Op == "Gather") {
    const TensorType *Idx = in(N, 1);
    if (!X || !Idx || !X->Ranked || !Idx->Ranked)
      return false;
    std::optional<int64_t> Axis =
        normAxis(intAttribute(N, "axis").value_or(0), X->Shape.size());
    if (!Axis || *Axis >= int64_t(X->Shape.size()))
      return false;
    TensorType Out;
    Out.Type = XT;
    Out.Ranked = true;
    Out.Shape.assign(X->Shape.begin(), X->Shape.begin() + *Axis);
    Out.Shape.insert(Out.Shape.end(), Idx->Shape.begin(), Idx->Shape.end());
    Out.Shape.insert(Out.Shape.end(), X->Shape.begin() + *Axis + 1,
                     X->Shape.end());
    return set(N, 0, Out);
  }
  if (Op == "Unsqueeze" || Op == "Squeeze") {
    if (!X || !X->Ranked)
      return false;
    std::optional<std::vector<int64_t>> Axes = intsAttribute(N, "axes");
    if (!Axes && N.Inputs.size() > 1)
      Axes = constInts(N, 1);
    TensorType Out = *X;
    if (Op == "Unsqueeze") {
      if (!Axes)
        return false;
      size_t Rank = X->Shape.size() + Axes->size();
      std::vector<bool> New(Rank, false);
      for (int64_t A : *Axes) {
        if (A < 0)
          A += int64_t(Rank);
        if (A < 0 || A >= int64_t(Rank))
          return false;
        New[A] = true;
      }
      Out.Shape.clear();
      size_t J = 0;
      for (size_t I = 0; I < Rank; ++I)
        Out.Shape.push_back(New[I] ? Dim::of(1) : X->Shape[J++]);
      return set(N, 0, Out);
    }
    Out.Shape.clear();
    for (size_t I = 0; I < X->Shape.size(); ++I) {
      bool Drop = false;
      if (Axes)
        for (int64_t A : *Axes)
          Drop |= (A < 0 ? A + int64_t(X->Shape.size()) : A) == int64_t(I);
      else
        Drop = X->Shape[I].known() && X->Shape[I].Value == 1;
      if (!Drop)
        Out.Shape.push_back(X->Shape[I]);
    }
    return set(N, 0, Out);
  }
  if (Op == "Reshape") {
    std::optional<std::vector<Dim>> Target = valueOf(N, 1);
    if (!X || !X->Ranked || !Target)
      return false;
    TensorType Out;
    Out.Type = XT;
    Out.Ranked = true;
    int Infer = -1;
    for (size_t I = 0; I < Target->size(); ++I) {
      const Dim &V = (*Target)[I];
      if (V.known() && V.Value == 0 && I < X->Shape.size())
        Out.Shape.push_back(X->Shape[I]);
      else if (V.known() && V.Value == -1) {
        Infer = int(I);
        Out.Shape.push_back(Dim());
      } else
        Out.Shape.push_back(V);
    }
    if (Infer >= 0) {
      // The -1 is the input's elements over the others', symbolic if need
      // be; dims on both sides cancel first.
      std::vector<Dim> Num = X->Shape, Den;
      for (size_t I = 0; I < Out.Shape.size(); ++I)
        if (int(I) != Infer)
          Den.push_back(Out.Shape[I]);
      for (auto It = Den.begin(); It != Den.end();) {
        auto Match =
            llvm::find_if(Num, [&](const Dim &D) { return sameDim(D, *It); });
        if (Match != Num.end()) {
          Num.erase(Match);
          It = Den.erase(It);
        } else {
          ++It;
        }
      }
      Dim P = Dim::of(1), Q = Dim::of(1);
      for (const Dim &D : Num)
        P = combine(P, D, '*');
      for (const Dim &D : Den)
        Q = combine(Q, D, '*');
      Out.Shape[Infer] = combine(P, Q, '/');
    }
    return set(N, 0, Out);
  }
  if (Op == "Concat") {
    std::optional<int64_t> AxisAttr = intAttribute(N, "axis");
    if (!X || !X->Ranked || !AxisAttr)
      return false;
    std::optional<int64_t> Axis = normAxis(*AxisAttr, X->Shape.size());
    if (!Axis || *Axis >= int64_t(X->Shape.size()))
      return false;
    TensorType Out = *X;
    int64_t Sum = 0;
    bool Known = true;
    for (unsigned I = 0; I < N.Inputs.size(); ++I) {
      const TensorType *T = in(N, I);
      if (!T || !T->Ranked || T->Shape.size() != X->Shape.size())
        return false;
      if (T->Shape[*Axis].known())
        Sum += T->Shape[*Axis].Value;
      else
        Known = false;
    }
    Out.Shape[*Axis] = Known ? Dim::of(Sum) : Dim();
    return set(N, 0, Out);
  }
  if (Op == "Flatten") {
    if (!X || !X->Ranked)
      return false;
    std::optional<int64_t> Axis =
        normAxis(intAttribute(N, "axis").value_or(1), X->Shape.size());
    if (!Axis)
      return false;
    auto Product = [&](size_t B, size_t E) {
      int64_t P = 1;
      for (size_t I = B; I < E; ++I) {
        if (!X->Shape[I].known())
          return Dim();
        P *= X->Shape[I].Value;
      }
      return Dim::of(P);
    };
    TensorType Out;
    Out.Type = XT;
    Out.Ranked = true;
    Out.Shape = {Product(0, *Axis), Product(*Axis, X->Shape.size())};
    return set(N, 0, Out);
  }
  if (Op == "Conv" || Op == "MaxPool" || Op == "AveragePool") {
    const TensorType *W = in(N, 1);
    if (!X || !X->Ranked || X->Shape.size() < 3)
      return false;
    size_t Spatial = X->Shape.size() - 2;
    std::vector<int64_t> Kernel = intsAttribute(N, "kernel_shape").value_or(
        std::vector<int64_t>());
    if (Kernel.empty() && Op == "Conv" && W && W->Ranked &&
        W->Shape.size() == X->Shape.size())
      for (size_t I = 2; I < W->Shape.size(); ++I)
        Kernel.push_back(W->Shape[I].Value);
    if (Kernel.size() != Spatial || attribute(N, "auto_pad"))
      return false;
    std::vector<int64_t> Strides =
        intsAttribute(N, "strides").value_or(std::vector<int64_t>(Spatial, 1));
    std::vector<int64_t> Dil =
        intsAttribute(N, "dilations").value_or(std::vector<int64_t>(Spatial, 1));
    std::vector<int64_t> Pads =
        intsAttribute(N, "pads").value_or(std::vector<int64_t>(2 * Spatial, 0));
    if (Strides.size() != Spatial || Dil.size() != Spatial ||
        Pads.size() != 2 * Spatial)
      return false;
    TensorType Out;
    Out.Type = XT;
    Out.Ranked = true;
    Out.Shape.push_back(X->Shape[0]);
    Out.Shape.push_back(Op == "Conv" ? (W && W->Ranked ? W->Shape[0] : Dim())
                                     : X->Shape[1]);
    for (size_t I = 0; I < Spatial; ++I) {
      const Dim &D = X->Shape[2 + I];
      if (!D.known() || Kernel[I] <= 0 || Strides[I] <= 0) {
        Out.Shape.push_back(Dim());
        continue;
      }
      int64_t Eff = Dil[I] * (Kernel[I] - 1) + 1;
      Out.Shape.push_back(Dim::of(
          (D.Value + Pads[I] + Pads[I + Spatial] - Eff) / Strides[I] + 1));
    }
    return set(N, 0, Out);
  }
  if (Op == "GlobalAveragePool" || Op == "GlobalMaxPool") {
    if (!X || !X->Ranked || X->Shape.size() < 3)
      return false;
    TensorType Out = *X;
    for (size_t I = 2; I < Out.Shape.size(); ++I)
      Out.Shape[I] = Dim::of(1);
    return set(N, 0, Out);
  }
  if (Op == "Expand") {
    std::optional<std::vector<Dim>> Target = valueOf(N, 1);
    if (!X || !X->Ranked || !Target)
      return false;
    TensorType T;
    T.Ranked = true;
    T.Shape = *Target;
    TensorType Out = broadcast({X, &T}, XT);
    return set(N, 0, Out);
  }
  if (Op == "ConstantOfShape") {
    std::optional<std::vector<Dim>> Target = valueOf(N, 0);
    TensorType Out;
    Out.Type = DType::Float;
    if (const onnx::AttributeProto *A = attribute(N, "value"); A && A->has_t())
      Out.Type = dtypeFromOnnx(A->t().data_type());
    if (Target) {
      Out.Ranked = true;
      Out.Shape = *Target;
    } else if (const TensorType *S = in(N, 0);
               S && S->Ranked && S->Shape.size() == 1 && S->Shape[0].known()) {
      Out.Ranked = true;
      Out.Shape.assign(size_t(S->Shape[0].Value), Dim());
    }
    return set(N, 0, Out);
  }
  if (Op == "Range") {
    TensorType Out;
    Out.Type = XT;
    Out.Ranked = true;
    Out.Shape = {Dim()};
    std::optional<std::vector<Dim>> Start = valueOf(N, 0),
                                    Limit = valueOf(N, 1),
                                    Delta = valueOf(N, 2);
    if (Start && Limit && Delta && Start->size() == 1 && Limit->size() == 1 &&
        Delta->size() == 1 && (*Delta)[0].known() && (*Delta)[0].Value == 1)
      Out.Shape = {combine((*Limit)[0], (*Start)[0], '-')};
    return set(N, 0, Out);
  }
  if (Op == "Slice" && N.Inputs.size() >= 3) {
    std::optional<std::vector<Dim>> Starts = valueOf(N, 1),
                                    Ends = valueOf(N, 2);
    bool HasAxes = N.Inputs.size() > 3 && !N.Inputs[3].empty();
    bool HasSteps = N.Inputs.size() > 4 && !N.Inputs[4].empty();
    std::optional<std::vector<Dim>> Axes =
        HasAxes ? valueOf(N, 3) : std::nullopt;
    std::optional<std::vector<Dim>> Steps =
        HasSteps ? valueOf(N, 4) : std::nullopt;
    if (!X || !X->Ranked || !Starts || !Ends ||
        Starts->size() != Ends->size() || (HasAxes && !Axes) ||
        (HasSteps && !Steps))
      return false;
    TensorType Out = *X;
    int64_t Rank = int64_t(X->Shape.size());
    for (size_t I = 0; I < Starts->size(); ++I) {
      int64_t Axis = int64_t(I);
      if (Axes) {
        if (I >= Axes->size() || !(*Axes)[I].known())
          return false;
        Axis = (*Axes)[I].Value;
      }
      if (Axis < 0)
        Axis += Rank;
      if (Axis < 0 || Axis >= Rank)
        return false;
      if (Steps && !(I < Steps->size() && (*Steps)[I].known() &&
                     (*Steps)[I].Value == 1)) {
        Out.Shape[Axis] = Dim();
        continue;
      }
      const Dim &Size = X->Shape[Axis];
      Dim S = (*Starts)[I], E = (*Ends)[I];
      // Huge ends clamp to the size; negative bounds count from the end.
      if (E.known() && (E.Value >= (int64_t(1) << 31) ||
                        (Size.known() && E.Value > Size.Value)))
        E = Size;
      else if (E.known() && E.Value < 0)
        E = combine(Size, Dim::of(-E.Value), '-');
      if (S.known() && S.Value < 0)
        S = combine(Size, Dim::of(-S.Value), '-');
      Out.Shape[Axis] = combine(E, S, '-');
    }
    return set(N, 0, Out);
  }

  if (Op == "Split") {
    if (!X || !X->Ranked)
      return false;
    std::optional<int64_t> Axis =
        normAxis(intAttribute(N, "axis").value_or(0), X->Shape.size());
    if (!Axis || *Axis >= int64_t(X->Shape.size()))
      return false;
    std::optional<std::vector<int64_t>> Sizes = intsAttribute(N, "split");
    if (!Sizes && N.Inputs.size() > 1)
      Sizes = constInts(N, 1);
    bool Any = false;
    for (unsigned O = 0; O < N.Outputs.size(); ++O) {
      TensorType Out = *X;
      if (Sizes && O < Sizes->size())
        Out.Shape[*Axis] = Dim::of((*Sizes)[O]);
      else if (X->Shape[*Axis].known())
        Out.Shape[*Axis] = Dim::of(X->Shape[*Axis].Value / N.Outputs.size());
      else
        Out.Shape[*Axis] = Dim();
      Any |= set(N, O, Out);
    }
    return Any;
  }
  return false;
}

} // namespace

ShapeInfo inferShapes(const Model &M) {
  ShapeInfo Info;
  std::vector<std::string> Sources;
  for (const Initializer &I : M.Initializers) {
    TensorType T;
    T.Type = I.Type;
    T.Ranked = true;
    for (int64_t D : I.Dims)
      T.Shape.push_back(Dim::of(D));
    Info.Types[I.Name] = T;
  }
  bool Declared = false;
  for (const auto &E : M.DeclaredTypes)
    if (!Info.Types.count(E.first())) {
      Info.Types[E.first()] = E.second;
      Declared |= E.second.Ranked && M.producer(E.first()) >= 0;
    }
  if (Declared)
    Sources.push_back("value_info");

  // ONNX's inference, where its registry knows the opset.
  auto Missing = [&] {
    for (const Node &N : M.Nodes)
      for (const std::string &O : N.Outputs)
        if (!O.empty() && (!Info.Types.count(O) || !Info.Types[O].Ranked))
          return true;
    return false;
  };
  constexpr int64_t LastOpsetKnownToOnnx = 17; // libonnx 1.12
  // libonnx's inference (its data propagation above all) assumes a model
  // that passes its checker: a node of an unknown operator, or with
  // inputs or outputs its schema does not allow, can crash it (found by
  // dscOnnxFuzzer). Such a model gets dsc's own rules only.
  auto SchemasHold = [&] {
    for (const onnx::NodeProto &N : M.Proto->graph().node()) {
      const std::string &Domain = N.domain();
      if (!Domain.empty() && Domain != "ai.onnx")
        continue; // Other domains: libonnx skips what it does not know.
      const onnx::OpSchema *S = onnx::OpSchemaRegistry::Schema(
          N.op_type(), int(M.opset()), Domain);
      if (!S || N.input_size() < S->min_input() ||
          N.input_size() > S->max_input() ||
          N.output_size() < S->min_output() ||
          N.output_size() > S->max_output())
        return false;
    }
    return true;
  };
  if (M.Proto && Missing() && M.opset() > 0 &&
      M.opset() <= LastOpsetKnownToOnnx && M.FunctionCount == 0 &&
      SchemasHold()) {
    onnx::ModelProto Copy = *M.Proto;
    try {
      onnx::ShapeInferenceOptions Options{/*check_type=*/false,
                                          /*error_mode=*/0,
                                          /*enable_data_propagation=*/false};
      onnx::shape_inference::InferShapes(Copy, onnx::OpSchemaRegistry::Instance(),
                                         Options);
      unsigned Added = 0;
      for (const onnx::ValueInfoProto &V : Copy.graph().value_info()) {
        TensorType &Slot = Info.Types[V.name()];
        if (Slot.Ranked || !V.type().has_tensor_type())
          continue;
        const onnx::TypeProto_Tensor &TT = V.type().tensor_type();
        Slot.Type = dtypeFromOnnx(TT.elem_type());
        if (TT.has_shape()) {
          Slot.Ranked = true;
          Slot.Shape.clear();
          // ONNX names dims it could not infer unk__N: unknown, not a
          // symbol the user could bind.
          for (const auto &D : TT.shape().dim())
            Slot.Shape.push_back(
                D.has_dim_value() ? Dim::of(D.dim_value())
                : D.has_dim_param() &&
                        !StringRef(D.dim_param()).startswith("unk__")
                    ? Dim::symbol(D.dim_param())
                    : Dim());
        }
        ++Added;
      }
      if (Added)
        Sources.push_back("ONNX shape inference");
    } catch (const std::exception &) {
      // A model ONNX cannot infer still gets dsc's inference below.
    }
  }

  Inferrer I(M, Info.Types);
  bool Own = false;
  for (const Node &N : M.Nodes)
    Own |= I.infer(N);
  if (Own)
    Sources.push_back("dsc inference");
  for (const Node &N : M.Nodes)
    for (const std::string &O : N.Outputs)
      if (!O.empty() && !Info.Types[O].Ranked)
        ++Info.UnknownOutputs;
  Info.Sources = join(Sources, " + ");
  return Info;
}

} // namespace dsc
