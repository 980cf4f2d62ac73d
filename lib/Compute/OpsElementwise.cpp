//===- OpsElementwise.cpp - Arithmetic, comparisons, activations ----------===//
//
// Every operator here computes each output element from the input elements
// at the same (broadcast) index, so one table row says all of it: arity,
// result type, the scalar function, and the gradient. The host evaluation
// keeps broadcast dims broadcast (stride 0), so a mask computed over
// [batch, 1, seq, seq] from a [1, 1, seq, seq] one costs seq^2 elements.
//
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Lowering.h"
#include "dsc/Compute/Ops.h"
#include "dsc/ReferenceKernels.h"

#include "llvm/ADT/StringMap.h"

#include <cmath>

using namespace llvm;

namespace dsc::compute {

using plan::PointwiseOp;

namespace {

/// What type an elementwise result has.
enum class ResultType {
  SameAsFirst, ///< The first input's type (arithmetic, activations).
  SameAsValue, ///< The second input's (Where: condition, x, y).
  Bool,        ///< Comparisons, logic, IsNaN.
  CastTo,      ///< The "to" attribute (Cast).
  LikeSecond,  ///< The second input's (CastLike).
};

/// An elementwise op: its arity, result type, and the pointwise
/// instruction that computes it (nullopt: a copy, as Identity and Cast;
/// the store converts the type).
struct ElementwiseInfo {
  unsigned Arity;
  ResultType Result;
  std::optional<PointwiseOp> Op;
};

bool tanhGelu(const Attributes &A) { return A.s("approximate") == "tanh"; }

const StringMap<ElementwiseInfo> &table() {
  using R = ResultType;
  using P = PointwiseOp;
  static const StringMap<ElementwiseInfo> T = {
      {"Add", {2, R::SameAsFirst, P::Add}},
      {"Sub", {2, R::SameAsFirst, P::Sub}},
      {"Mul", {2, R::SameAsFirst, P::Mul}},
      {"Div", {2, R::SameAsFirst, P::Div}},
      {"Pow", {2, R::SameAsFirst, P::Pow}},
      {"Max", {2, R::SameAsFirst, P::Max}},
      {"Min", {2, R::SameAsFirst, P::Min}},
      {"Mod", {2, R::SameAsFirst, P::Mod}},
      {"Equal", {2, R::Bool, P::Equal}},
      {"Less", {2, R::Bool, P::Less}},
      {"LessOrEqual", {2, R::Bool, P::LessOrEqual}},
      {"Greater", {2, R::Bool, P::Greater}},
      {"GreaterOrEqual", {2, R::Bool, P::GreaterOrEqual}},
      {"And", {2, R::Bool, P::And}},
      {"Or", {2, R::Bool, P::Or}},
      {"Xor", {2, R::Bool, P::Xor}},
      {"Not", {1, R::Bool, P::Not}},
      {"IsNaN", {1, R::Bool, P::IsNaN}},
      {"IsInf", {1, R::Bool, P::IsInf}},
      {"Where", {3, R::SameAsValue, P::Where}},
      {"Neg", {1, R::SameAsFirst, P::Neg}},
      {"Abs", {1, R::SameAsFirst, P::Abs}},
      {"Sign", {1, R::SameAsFirst, P::Sign}},
      {"Sqrt", {1, R::SameAsFirst, P::Sqrt}},
      {"Reciprocal", {1, R::SameAsFirst, P::Reciprocal}},
      {"Exp", {1, R::SameAsFirst, P::Exp}},
      {"Log", {1, R::SameAsFirst, P::Log}},
      {"Tanh", {1, R::SameAsFirst, P::Tanh}},
      {"Erf", {1, R::SameAsFirst, P::Erf}},
      {"Sigmoid", {1, R::SameAsFirst, P::Sigmoid}},
      {"Relu", {1, R::SameAsFirst, P::Relu}},
      {"Cos", {1, R::SameAsFirst, P::Cos}},
      {"Sin", {1, R::SameAsFirst, P::Sin}},
      {"Floor", {1, R::SameAsFirst, P::Floor}},
      {"Ceil", {1, R::SameAsFirst, P::Ceil}},
      {"Identity", {1, R::SameAsFirst, std::nullopt}},
      {"Cast", {1, R::CastTo, std::nullopt}},
      {"CastLike", {2, R::LikeSecond, std::nullopt}},
      // The form (erf or tanh) comes from the "approximate" attribute.
      {"Gelu", {1, R::SameAsFirst, P::GeluErf}},
      // dsc.GeluGrad(x, dy) = dy * gelu'(x), either form.
      {"dsc.GeluGrad", {2, R::SameAsFirst, P::GeluErfGrad}},
  };
  return T;
}

const ElementwiseInfo &infoOf(const Node &N) { return table().find(N.Op)->second; }

constexpr double Pi = 3.14159265358979323846;

/// Integer arithmetic done exactly: shape and index values (Slice bounds
/// of INT64_MAX among them) do not survive a trip through double.
std::optional<int64_t> integerOp(StringRef Op, const int64_t *X,
                                 const Attributes &A) {
  if (Op == "Add")
    return X[0] + X[1];
  if (Op == "Sub")
    return X[0] - X[1];
  if (Op == "Mul")
    return X[0] * X[1];
  if (Op == "Div")
    return X[1] ? std::optional<int64_t>(X[0] / X[1]) : std::nullopt;
  if (Op == "Max")
    return std::max(X[0], X[1]);
  if (Op == "Min")
    return std::min(X[0], X[1]);
  if (Op == "Neg")
    return -X[0];
  if (Op == "Abs")
    return X[0] < 0 ? -X[0] : X[0];
  if (Op == "Identity" || Op == "Cast" || Op == "CastLike")
    return X[0];
  if (Op == "Where")
    return X[0] ? X[1] : X[2];
  if (Op == "Mod" && X[1]) {
    int64_t M = X[0] % X[1];
    return !A.i("fmod", 0) && M && ((M < 0) != (X[1] < 0)) ? M + X[1] : M;
  }
  return std::nullopt;
}

/// ONNX's element type numbers, for Cast's "to".
std::optional<DType> castTarget(int64_t To) {
  switch (To) {
  case 1:
  case 11: // double: computed as fp32 like every float
    return DType::F32;
  case 10:
    return DType::F16;
  case 16:
    return DType::BF16;
  case 6:
  case 12:
  case 4:
  case 5:
  case 3:
    return DType::I32;
  case 7:
  case 13:
    return DType::I64;
  case 9:
  case 2:
    return DType::U8;
  }
  return std::nullopt;
}

Error inferElementwise(InferContext &C) {
  const ElementwiseInfo &I = infoOf(C.N);
  if (C.N.Inputs.size() != I.Arity)
    return C.error("takes " + Twine(I.Arity) + " inputs, has " +
                   Twine(C.N.Inputs.size()));
  Shape Out;
  for (unsigned K = 0; K < I.Arity; ++K) {
    if (!C.has(K))
      return C.error("input " + Twine(K) + " is missing");
    if (I.Result == ResultType::LikeSecond && K == 1)
      break; // CastLike takes only the type of its second input.
    std::optional<Shape> B = broadcastShapes(Out, C.shape(K));
    if (!B)
      return C.error("inputs of shapes " + shapeText(Out) + " and " +
                     shapeText(C.shape(K)) + " do not broadcast");
    Out = *B;
  }
  DType T = C.in(0).Type;
  switch (I.Result) {
  case ResultType::SameAsFirst:
    // Mixed int/float arithmetic (a folded shape times a scale): float.
    for (unsigned K = 1; K < I.Arity; ++K)
      if (C.in(K).isFloat() && !plan::isFloatType(T))
        T = C.in(K).Type;
    break;
  case ResultType::SameAsValue:
    T = C.in(1).Type;
    break;
  case ResultType::Bool:
    T = DType::U8;
    break;
  case ResultType::CastTo: {
    std::optional<DType> To = castTarget(C.N.A.i("to", 0));
    if (!To)
      return C.error("casts to ONNX element type " +
                     Twine(C.N.A.i("to", 0)) + ", which dsc does not compute");
    T = *To;
    break;
  }
  case ResultType::LikeSecond:
    T = C.in(1).Type;
    break;
  }
  C.out(0, Out, T);
  return Error::success();
}

/// Whether every slice of T along Axis holds the same values as the first,
/// checked only when T is much smaller than the result (Out elements): a
/// mask built per batch row from position ids is the same in every row,
/// and computing it once instead of [16, 1, 1024, 1024] times is what keeps
/// folding a real export's masks fast.
bool sameAlong(const HostTensor &T, size_t Axis, int64_t Out) {
  int64_t N = T.numel();
  if (Out < (int64_t(1) << 16) || N * 4 > Out)
    return false;
  std::vector<double> V = T.values();
  int64_t Inner = 1;
  for (size_t K = Axis + 1; K < T.shape().size(); ++K)
    Inner *= T.shape()[K];
  int64_t Dim = T.shape()[Axis], Block = Inner * Dim;
  for (int64_t Outer = 0; Outer < N; Outer += Block)
    for (int64_t D = 1; D < Dim; ++D)
      if (!std::equal(V.begin() + Outer, V.begin() + Outer + Inner,
                      V.begin() + Outer + D * Inner))
        return false;
  return true;
}

Error evalElementwise(EvalContext &C) {
  const ElementwiseInfo &I = infoOf(C.N);
  const Value &OutV = C.outValue(0);
  const Shape &Out = OutV.Dims;
  // Compute only over the dims some input varies along; the others stay
  // broadcast in the result.
  std::vector<HostTensor> Narrow;
  if (I.Result == ResultType::LikeSecond)
    C.In.resize(1);
  Shape Compact = Out;
  for (size_t K = 0; K < Out.size(); ++K) {
    bool Varies = false;
    for (const HostTensor *T : C.In) {
      size_t Lead = Out.size() - T->shape().size();
      if (K >= Lead && T->shape()[K - Lead] != 1 && T->strides()[K - Lead] &&
          !sameAlong(*T, K - Lead, numel(Out)))
        Varies = true;
    }
    if (!Varies)
      Compact[K] = 1;
  }
  for (const HostTensor *T : C.In) {
    HostTensor V = *T;
    size_t Lead = Out.size() - T->shape().size();
    for (size_t K = Lead; K < Out.size(); ++K)
      if (Compact[K] == 1 && V.shape()[K - Lead] != 1)
        V = V.sliced(int64_t(K - Lead), 0, 1, 1);
    Narrow.push_back(std::move(V));
  }
  std::vector<const HostTensor *> Ptrs;
  for (const HostTensor &T : Narrow)
    Ptrs.push_back(&T);
  HostTensor R(OutV.isFloat() ? DType::F32 : OutV.Type, Compact);
  bool Float = OutV.isFloat();
  std::optional<PointwiseOp> Op = pointwiseOpOf(C.N);
  if (Op == PointwiseOp::Mod && C.N.A.i("fmod", 0))
    return C.error("has fmod=1, which dsc does not compute");
  bool Integers = !Float && OutV.Type != DType::U8;
  for (const HostTensor *T : Ptrs)
    Integers &= !T->isFloat();
  double Args[3] = {0, 0, 0};
  int64_t IntArgs[3] = {0, 0, 0};
  HostTensor::forEach(Compact, Ptrs, [&](int64_t Flat, const int64_t *Off) {
    if (Integers) {
      for (size_t J = 0; J < Ptrs.size(); ++J)
        IntArgs[J] = Ptrs[J]->storageAtInt(Off[J]);
      if (std::optional<int64_t> V = integerOp(C.N.Op, IntArgs, C.N.A)) {
        R.intData()[Flat] = *V;
        return;
      }
    }
    for (size_t J = 0; J < Ptrs.size(); ++J)
      Args[J] = Ptrs[J]->storageAt(Off[J]);
    double V = Op ? reference::pointwise(*Op, Args) : Args[0];
    if (Float)
      R.floatData()[Flat] = float(V);
    else
      R.intData()[Flat] = OutV.Type == DType::U8 ? int64_t(V != 0)
                                                 : int64_t(std::trunc(V));
  });
  if (Float)
    R = R.cast(OutV.Type);
  C.Out[0] = Compact == Out ? R : R.expanded(Out);
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

/// Gives input I the part of G that broadcasting sent to it.
void give(GradContext &C, unsigned I, ValueId G) {
  if (C.needs(I))
    C.setGrad(I, C.sumTo(G, C.shape(C.input(I))));
}

void gradAdd(GradContext &C) {
  give(C, 0, C.dOut(0));
  give(C, 1, C.dOut(0));
}
void gradSub(GradContext &C) {
  give(C, 0, C.dOut(0));
  if (C.needs(1))
    give(C, 1, C.neg(C.dOut(0)));
}
void gradMul(GradContext &C) {
  if (C.needs(0))
    give(C, 0, C.mul(C.dOut(0), C.input(1)));
  if (C.needs(1))
    give(C, 1, C.mul(C.dOut(0), C.input(0)));
}
void gradDiv(GradContext &C) {
  ValueId G = C.dOut(0);
  if (C.needs(0))
    give(C, 0, C.div(G, C.input(1)));
  if (C.needs(1)) // d(a/b)/db = -(a/b)/b
    give(C, 1, C.neg(C.mul(G, C.div(C.output(0), C.input(1)))));
}
void gradPow(GradContext &C) {
  ValueId G = C.dOut(0), A = C.input(0), B = C.input(1);
  if (C.needs(0)) {
    const Value &Exp = C.G.Values[B];
    ValueId Local;
    if (Exp.known() && Exp.Data->numel() == 1) {
      double E = Exp.Data->at(0);
      Local = E == 2 ? C.mul(A, C.scalar(2))
                     : C.mul(C.emit("Pow", {A, C.scalar(E - 1)}), C.scalar(E));
    } else {
      Local = C.mul(C.emit("Pow", {A, C.sub(B, C.scalar(1))}), B);
    }
    give(C, 0, C.mul(G, Local));
  }
  if (C.needs(1))
    give(C, 1, C.mul(G, C.mul(C.output(0), C.emit("Log", {A}))));
}
void gradNeg(GradContext &C) { give(C, 0, C.neg(C.dOut(0))); }
void gradSqrt(GradContext &C) {
  give(C, 0, C.div(C.dOut(0), C.mul(C.output(0), C.scalar(2))));
}
void gradReciprocal(GradContext &C) {
  ValueId Y = C.output(0);
  give(C, 0, C.neg(C.mul(C.dOut(0), C.mul(Y, Y))));
}
void gradExp(GradContext &C) { give(C, 0, C.mul(C.dOut(0), C.output(0))); }
void gradLog(GradContext &C) { give(C, 0, C.div(C.dOut(0), C.input(0))); }
void gradTanh(GradContext &C) {
  ValueId Y = C.output(0);
  give(C, 0, C.mul(C.dOut(0), C.sub(C.scalar(1), C.mul(Y, Y))));
}
void gradSigmoid(GradContext &C) {
  ValueId Y = C.output(0);
  give(C, 0, C.mul(C.dOut(0), C.mul(Y, C.sub(C.scalar(1), Y))));
}
void gradErf(GradContext &C) {
  ValueId X = C.input(0);
  ValueId E = C.emit("Exp", {C.neg(C.mul(X, X))});
  give(C, 0, C.mul(C.dOut(0), C.mul(E, C.scalar(2 / std::sqrt(Pi)))));
}
void gradRelu(GradContext &C) {
  ValueId Positive = C.emit("Greater", {C.input(0), C.scalar(0)});
  give(C, 0, C.emit("Where", {Positive, C.dOut(0), C.scalar(0)}));
}
void gradCos(GradContext &C) {
  give(C, 0, C.neg(C.mul(C.dOut(0), C.emit("Sin", {C.input(0)}))));
}
void gradSin(GradContext &C) {
  give(C, 0, C.mul(C.dOut(0), C.emit("Cos", {C.input(0)})));
}
void gradAbs(GradContext &C) {
  give(C, 0, C.mul(C.dOut(0), C.emit("Sign", {C.input(0)})));
}
void gradWhere(GradContext &C) {
  ValueId Cond = C.input(0), G = C.dOut(0);
  if (C.needs(1))
    give(C, 1, C.emit("Where", {Cond, G, C.scalar(0)}));
  if (C.needs(2))
    give(C, 2, C.emit("Where", {Cond, C.scalar(0), G}));
}
void gradMaxMin(GradContext &C) {
  // The gradient goes to the input that was chosen (the first on a tie).
  bool Max = C.node().Op == "Max";
  ValueId FirstWins = C.emit(Max ? "GreaterOrEqual" : "LessOrEqual",
                             {C.input(0), C.input(1)});
  if (C.needs(0))
    give(C, 0, C.emit("Where", {FirstWins, C.dOut(0), C.scalar(0)}));
  if (C.needs(1))
    give(C, 1, C.emit("Where", {FirstWins, C.scalar(0), C.dOut(0)}));
}
void gradIdentity(GradContext &C) {
  if (C.G.Values[C.input(0)].isFloat())
    give(C, 0, C.dOut(0));
}
void gradGelu(GradContext &C) {
  Attributes A;
  A.setString("approximate", C.node().A.s("approximate", "none"));
  give(C, 0, C.emit("dsc.GeluGrad", {C.input(0), C.dOut(0)}, A));
}

#define EW(Name, Grad, Flags, Summary)                                         \
  OpDef { Name,    inferElementwise,        evalElementwise, Grad,             \
          Elementwise | (Flags), Summary, lowerPointwise }

const OpDef Ops[] = {
    EW("Add", gradAdd, 0, "a + b"),
    EW("Sub", gradSub, 0, "a - b"),
    EW("Mul", gradMul, 0, "a * b"),
    EW("Div", gradDiv, 0, "a / b"),
    EW("Pow", gradPow, 0, "a ^ b"),
    EW("Max", gradMaxMin, 0, "max(a, b)"),
    EW("Min", gradMaxMin, 0, "min(a, b)"),
    EW("Mod", nullptr, NoGradient, "a mod b (index arithmetic)"),
    EW("Equal", nullptr, NoGradient, "a == b"),
    EW("Less", nullptr, NoGradient, "a < b"),
    EW("LessOrEqual", nullptr, NoGradient, "a <= b"),
    EW("Greater", nullptr, NoGradient, "a > b"),
    EW("GreaterOrEqual", nullptr, NoGradient, "a >= b"),
    EW("And", nullptr, NoGradient, "logical and"),
    EW("Or", nullptr, NoGradient, "logical or"),
    EW("Xor", nullptr, NoGradient, "logical xor"),
    EW("Not", nullptr, NoGradient, "logical not"),
    EW("IsNaN", nullptr, NoGradient, "x is NaN"),
    EW("IsInf", nullptr, NoGradient, "x is infinite"),
    EW("Where", gradWhere, 0, "c ? a : b"),
    EW("Neg", gradNeg, 0, "-x"),
    EW("Abs", gradAbs, 0, "|x|"),
    EW("Sign", nullptr, NoGradient, "sign(x)"),
    EW("Sqrt", gradSqrt, 0, "sqrt(x)"),
    EW("Reciprocal", gradReciprocal, 0, "1 / x"),
    EW("Exp", gradExp, 0, "e^x"),
    EW("Log", gradLog, 0, "ln x"),
    EW("Tanh", gradTanh, 0, "tanh x"),
    EW("Erf", gradErf, 0, "erf x"),
    EW("Sigmoid", gradSigmoid, 0, "1 / (1 + e^-x)"),
    EW("Relu", gradRelu, 0, "max(x, 0)"),
    EW("Cos", gradCos, 0, "cos x"),
    EW("Sin", gradSin, 0, "sin x"),
    EW("Floor", nullptr, NoGradient, "floor x"),
    EW("Ceil", nullptr, NoGradient, "ceil x"),
    EW("Identity", gradIdentity, 0, "x"),
    EW("Cast", gradIdentity, 0, "x in another element type"),
    EW("CastLike", gradIdentity, 0, "x in the element type of y"),
    EW("Gelu", gradGelu, 0, "GELU, exact (erf) or tanh form"),
    EW("dsc.GeluGrad", nullptr, 0, "dy * gelu'(x)"),
};
#undef EW

} // namespace

ArrayRef<OpDef> elementwiseOps() { return Ops; }

std::optional<PointwiseOp> pointwiseOpOf(const Node &N) {
  auto It = table().find(N.Op);
  if (It == table().end())
    return std::nullopt;
  std::optional<PointwiseOp> Op = It->second.Op;
  if (tanhGelu(N.A) && Op == PointwiseOp::GeluErf)
    return PointwiseOp::GeluTanh;
  if (tanhGelu(N.A) && Op == PointwiseOp::GeluErfGrad)
    return PointwiseOp::GeluTanhGrad;
  return Op;
}

} // namespace dsc::compute
