//===- OpsShape.cpp - Shapes, views, slicing, gathering -------------------===//
//
// The operators that compute shapes (folded at plan time once the model's
// dims are bound), those that only re-index a tensor (views: no kernel
// once lowered), and the ones that select or combine parts of tensors.
//
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Lowering.h"
#include "dsc/Compute/Ops.h"
#include "dsc/ReferenceKernels.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace llvm;

namespace dsc::compute {

namespace {

Error expectInputs(InferContext &C, unsigned Min, unsigned Max) {
  unsigned N = C.N.Inputs.size();
  if (N < Min || N > Max)
    return C.error("takes " + Twine(Min) + (Min == Max ? "" : "-" + Twine(Max)) +
                   " inputs, has " + Twine(N));
  for (unsigned I = 0; I < Min; ++I)
    if (!C.has(I))
      return C.error("input " + Twine(I) + " is missing");
  return Error::success();
}

std::optional<int64_t> normalizeAxis(int64_t Axis, int64_t Rank) {
  if (Axis < 0)
    Axis += Rank;
  if (Axis < 0 || Axis >= Rank)
    return std::nullopt;
  return Axis;
}

Error badAxis(InferContext &C, int64_t Axis, size_t Rank) {
  return C.error("axis " + Twine(Axis) + " is outside a tensor of rank " +
                 Twine(Rank));
}

/// Axes from the attribute (older opsets) or input I (newer ones).
Expected<std::optional<std::vector<int64_t>>> axesOf(InferContext &C,
                                                    unsigned I) {
  if (std::optional<std::vector<int64_t>> A = C.N.A.ints("axes"))
    return A;
  if (!C.has(I))
    return std::optional<std::vector<int64_t>>();
  Expected<std::vector<int64_t>> V = C.ints(I, "the axes");
  if (!V)
    return V.takeError();
  return std::optional<std::vector<int64_t>>(std::move(*V));
}

HostTensor int64s(const std::vector<int64_t> &V, bool Scalar = false) {
  return HostTensor::fromInts(DType::I64,
                              Scalar ? Shape{} : Shape{int64_t(V.size())}, V);
}

//===----------------------------------------------------------------------===//
// Shape, Size, Constant, ConstantOfShape, Range
//===----------------------------------------------------------------------===//

std::pair<int64_t, int64_t> shapeRange(const Node &N, int64_t Rank) {
  int64_t Start = N.A.i("start", 0), End = N.A.i("end", Rank);
  Start = std::clamp<int64_t>(Start < 0 ? Start + Rank : Start, 0, Rank);
  End = std::clamp<int64_t>(End < 0 ? End + Rank : End, 0, Rank);
  return {Start, std::max(Start, End)};
}

Error inferShape(InferContext &C) {
  if (Error E = expectInputs(C, 1, 1))
    return E;
  auto [S, E] = shapeRange(C.N, int64_t(C.shape(0).size()));
  C.out(0, {E - S}, DType::I64);
  return Error::success();
}
Error evalShape(EvalContext &C) {
  const Shape &X = C.G.Values[C.N.Inputs[0]].Dims;
  auto [S, E] = shapeRange(C.N, int64_t(X.size()));
  C.Out[0] = int64s(std::vector<int64_t>(X.begin() + S, X.begin() + E));
  return Error::success();
}

Error inferSize(InferContext &C) {
  if (Error E = expectInputs(C, 1, 1))
    return E;
  C.out(0, {}, DType::I64);
  return Error::success();
}
Error evalSize(EvalContext &C) {
  C.Out[0] = int64s({numel(C.G.Values[C.N.Inputs[0]].Dims)}, true);
  return Error::success();
}

Error inferConstantOfShape(InferContext &C) {
  if (Error E = expectInputs(C, 1, 1))
    return E;
  Expected<std::vector<int64_t>> S = C.ints(0, "the shape");
  if (!S)
    return S.takeError();
  for (int64_t D : *S)
    if (D < 0)
      return C.error("has a negative dimension");
  DType T = DType::F32;
  if (C.N.A.has("value_type"))
    T = DType(C.N.A.i("value_type", 0));
  C.out(0, *S, T);
  return Error::success();
}
Error evalConstantOfShape(EvalContext &C) {
  const Value &V = C.outValue(0);
  double X = C.N.A.f("value", 0);
  HostTensor One = HostTensor::scalar(V.Type, X);
  C.Out[0] = One.expanded(V.Dims);
  return Error::success();
}

Error inferRange(InferContext &C) {
  if (Error E = expectInputs(C, 3, 3))
    return E;
  const HostTensor *S = C.constant(0), *L = C.constant(1), *D = C.constant(2);
  if (!S || !L || !D)
    return C.error("its bounds are computed at run time; dsc needs them at "
                   "plan time");
  double Delta = D->at(0);
  if (Delta == 0)
    return C.error("has a step of 0");
  int64_t N = std::max<int64_t>(
      0, int64_t(std::ceil((L->at(0) - S->at(0)) / Delta)));
  C.out(0, {N}, C.in(0).Type);
  return Error::success();
}
Error evalRange(EvalContext &C) {
  const Value &V = C.outValue(0);
  HostTensor &Out = C.fresh(0);
  double S = C.In[0]->at(0), D = C.In[2]->at(0);
  for (int64_t I = 0; I < V.Dims[0]; ++I)
    Out.set(I, S + double(I) * D);
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Views: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Expand
//===----------------------------------------------------------------------===//

Error evalView(EvalContext &C);

Error inferReshape(InferContext &C) {
  if (Error E = expectInputs(C, 2, 2))
    return E;
  Expected<std::vector<int64_t>> Target = C.ints(1, "the target shape");
  if (!Target)
    return Target.takeError();
  const Shape &X = C.shape(0);
  bool AllowZero = C.N.A.i("allowzero", 0);
  Shape Out;
  int Infer = -1;
  int64_t Known = 1;
  for (size_t I = 0; I < Target->size(); ++I) {
    int64_t D = (*Target)[I];
    if (D == 0 && !AllowZero) {
      if (I >= X.size())
        return C.error("copies dimension " + Twine(I) + " of a tensor of rank " +
                       Twine(X.size()));
      D = X[I];
    }
    if (D == -1) {
      if (Infer >= 0)
        return C.error("has two -1 dimensions");
      Infer = int(I);
      Out.push_back(1);
      continue;
    }
    if (D < 0)
      return C.error("has dimension " + Twine(D));
    if (__builtin_mul_overflow(Known, D, &Known))
      return C.error("asks for more elements than int64 holds");
    Out.push_back(D);
  }
  int64_t Elems = numel(X);
  if (Infer >= 0) {
    if (Known == 0 || Elems % Known)
      return C.error("cannot reshape " + shapeText(X) + " to " +
                     shapeText(*Target));
    Out[size_t(Infer)] = Elems / Known;
  }
  if (numel(Out) != Elems)
    return C.error("cannot reshape " + shapeText(X) + " (" + Twine(Elems) +
                   " elements) to " + shapeText(Out));
  C.out(0, Out, C.in(0).Type);
  return Error::success();
}

void gradReshapeLike(GradContext &C) {
  C.setGrad(0, C.reshape(C.dOut(0), C.shape(C.input(0))));
}

Error inferFlatten(InferContext &C) {
  if (Error E = expectInputs(C, 1, 1))
    return E;
  const Shape &X = C.shape(0);
  int64_t Axis = C.N.A.i("axis", 1);
  if (Axis < 0)
    Axis += int64_t(X.size());
  if (Axis < 0 || Axis > int64_t(X.size()))
    return badAxis(C, Axis, X.size());
  int64_t A = numel(ArrayRef<int64_t>(X).take_front(size_t(Axis)));
  C.out(0, {A, numel(X) / std::max<int64_t>(A, 1)}, C.in(0).Type);
  return Error::success();
}

Error inferSqueeze(InferContext &C) {
  if (Error E = expectInputs(C, 1, 2))
    return E;
  const Shape &X = C.shape(0);
  auto Axes = axesOf(C, 1);
  if (!Axes)
    return Axes.takeError();
  std::vector<bool> Drop(X.size(), false);
  if (*Axes) {
    for (int64_t A : **Axes) {
      std::optional<int64_t> K = normalizeAxis(A, int64_t(X.size()));
      if (!K)
        return badAxis(C, A, X.size());
      if (X[size_t(*K)] != 1)
        return C.error("squeezes dimension " + Twine(*K) + " of size " +
                       Twine(X[size_t(*K)]));
      Drop[size_t(*K)] = true;
    }
  } else {
    for (size_t K = 0; K < X.size(); ++K)
      Drop[K] = X[K] == 1;
  }
  Shape Out;
  for (size_t K = 0; K < X.size(); ++K)
    if (!Drop[K])
      Out.push_back(X[K]);
  C.out(0, Out, C.in(0).Type);
  return Error::success();
}

Error inferUnsqueeze(InferContext &C) {
  if (Error E = expectInputs(C, 1, 2))
    return E;
  const Shape &X = C.shape(0);
  auto Axes = axesOf(C, 1);
  if (!Axes)
    return Axes.takeError();
  if (!*Axes)
    return C.error("has no axes");
  int64_t Rank = int64_t(X.size() + (*Axes)->size());
  std::vector<bool> New(size_t(Rank), false);
  for (int64_t A : **Axes) {
    std::optional<int64_t> K = normalizeAxis(A, Rank);
    if (!K || New[size_t(*K)])
      return badAxis(C, A, size_t(Rank));
    New[size_t(*K)] = true;
  }
  Shape Out;
  size_t J = 0;
  for (int64_t K = 0; K < Rank; ++K)
    Out.push_back(New[size_t(K)] ? 1 : X[J++]);
  C.out(0, Out, C.in(0).Type);
  return Error::success();
}

std::vector<int64_t> permOf(const Node &N, size_t Rank) {
  std::vector<int64_t> P = N.A.ints("perm").value_or(std::vector<int64_t>());
  if (P.empty())
    for (int64_t K = int64_t(Rank) - 1; K >= 0; --K)
      P.push_back(K);
  return P;
}

Error inferTranspose(InferContext &C) {
  if (Error E = expectInputs(C, 1, 1))
    return E;
  const Shape &X = C.shape(0);
  std::vector<int64_t> P = permOf(C.N, X.size());
  if (P.size() != X.size())
    return C.error("permutes " + Twine(P.size()) + " dims of a tensor of rank " +
                   Twine(X.size()));
  std::vector<bool> Seen(X.size(), false);
  Shape Out;
  for (int64_t K : P) {
    if (K < 0 || K >= int64_t(X.size()) || Seen[size_t(K)])
      return C.error("perm " + shapeText(P) + " is not a permutation");
    Seen[size_t(K)] = true;
    Out.push_back(X[size_t(K)]);
  }
  C.out(0, Out, C.in(0).Type);
  return Error::success();
}
Error evalTranspose(EvalContext &C) {
  C.Out[0] = C.In[0]->permuted(permOf(C.N, size_t(C.In[0]->rank())));
  return Error::success();
}
void gradTranspose(GradContext &C) {
  std::vector<int64_t> P = permOf(C.node(), C.shape(C.input(0)).size());
  std::vector<int64_t> Inverse(P.size());
  for (size_t K = 0; K < P.size(); ++K)
    Inverse[size_t(P[K])] = int64_t(K);
  C.setGrad(0, C.transpose(C.dOut(0), Inverse));
}

Error inferExpand(InferContext &C) {
  if (Error E = expectInputs(C, 2, 2))
    return E;
  Expected<std::vector<int64_t>> S = C.ints(1, "the target shape");
  if (!S)
    return S.takeError();
  std::optional<Shape> Out = broadcastShapes(C.shape(0), *S);
  if (!Out)
    return C.error("cannot expand " + shapeText(C.shape(0)) + " to " +
                   shapeText(*S));
  C.out(0, *Out, C.in(0).Type);
  return Error::success();
}
Error evalExpand(EvalContext &C) {
  C.Out[0] = C.In[0]->expanded(C.outValue(0).Dims);
  return Error::success();
}
void gradExpand(GradContext &C) {
  C.setGrad(0, C.sumTo(C.dOut(0), C.shape(C.input(0))));
}

/// Reshape, Flatten, Squeeze, Unsqueeze: the same elements, another shape.
Error evalView(EvalContext &C) {
  C.Out[0] = C.In[0]->reshaped(C.outValue(0).Dims);
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Slice and its gradient
//===----------------------------------------------------------------------===//

/// One axis of a slice, normalized: Count elements from Start by Step.
struct SliceAxis {
  int64_t Axis, Start, Step, Count;
};

Expected<std::vector<SliceAxis>> sliceAxes(InferContext &C) {
  const Shape &X = C.shape(0);
  std::vector<int64_t> Starts, Ends, Axes, Steps;
  if (C.N.Inputs.size() == 1) { // Opset 1-9: attributes.
    Starts = C.N.A.ints("starts").value_or(std::vector<int64_t>());
    Ends = C.N.A.ints("ends").value_or(std::vector<int64_t>());
    Axes = C.N.A.ints("axes").value_or(std::vector<int64_t>());
  } else {
    auto S = C.ints(1, "the starts");
    auto E = C.ints(2, "the ends");
    if (!S)
      return S.takeError();
    if (!E)
      return E.takeError();
    Starts = *S, Ends = *E;
    if (C.has(3)) {
      auto A = C.ints(3, "the axes");
      if (!A)
        return A.takeError();
      Axes = *A;
    }
    if (C.has(4)) {
      auto P = C.ints(4, "the steps");
      if (!P)
        return P.takeError();
      Steps = *P;
    }
  }
  if (Starts.size() != Ends.size())
    return C.error("has " + Twine(Starts.size()) + " starts and " +
                   Twine(Ends.size()) + " ends");
  if (Axes.empty())
    for (size_t K = 0; K < Starts.size(); ++K)
      Axes.push_back(int64_t(K));
  if (Steps.empty())
    Steps.assign(Starts.size(), 1);
  if (Axes.size() != Starts.size() || Steps.size() != Starts.size())
    return C.error("its starts, ends, axes and steps differ in length");
  std::vector<SliceAxis> Out;
  for (size_t K = 0; K < Starts.size(); ++K) {
    std::optional<int64_t> A = normalizeAxis(Axes[K], int64_t(X.size()));
    if (!A)
      return badAxis(C, Axes[K], X.size());
    int64_t Dim = X[size_t(*A)], Step = Steps[K];
    if (Step == 0)
      return C.error("has a step of 0");
    int64_t S = Starts[K], E = Ends[K];
    if (S < 0)
      S += Dim;
    if (E < 0)
      E += Dim;
    if (Step > 0) {
      S = std::clamp<int64_t>(S, 0, Dim);
      E = std::clamp<int64_t>(E, 0, Dim);
    } else {
      S = std::clamp<int64_t>(S, 0, Dim - 1);
      E = std::clamp<int64_t>(E, -1, Dim - 1);
    }
    int64_t Count =
        Step > 0 ? (E - S + Step - 1) / Step : (S - E + (-Step) - 1) / (-Step);
    Out.push_back({*A, S, Step, std::max<int64_t>(0, Count)});
  }
  return Out;
}

/// The normalized slice lives in the node's attributes once inferred, so
/// that evaluation and gradients need no constant inputs.
void recordSlice(Node &N, const std::vector<SliceAxis> &Axes) {
  std::vector<int64_t> A, S, P, Cnt;
  for (const SliceAxis &X : Axes) {
    A.push_back(X.Axis);
    S.push_back(X.Start);
    P.push_back(X.Step);
    Cnt.push_back(X.Count);
  }
  N.A.set("dsc_axes", A).set("dsc_starts", S).set("dsc_steps", P).set(
      "dsc_counts", Cnt);
}

std::vector<SliceAxis> recordedSlice(const Node &N) {
  std::vector<int64_t> A = *N.A.ints("dsc_axes"), S = *N.A.ints("dsc_starts"),
                       P = *N.A.ints("dsc_steps"), Cnt = *N.A.ints("dsc_counts");
  std::vector<SliceAxis> Out;
  for (size_t K = 0; K < A.size(); ++K)
    Out.push_back({A[K], S[K], P[K], Cnt[K]});
  return Out;
}

Error inferSlice(InferContext &C) {
  if (Error E = expectInputs(C, C.N.Inputs.size() == 1 ? 1 : 3, 5))
    return E;
  auto Axes = sliceAxes(C);
  if (!Axes)
    return Axes.takeError();
  Shape Out = C.shape(0);
  for (const SliceAxis &A : *Axes)
    Out[size_t(A.Axis)] = A.Count;
  recordSlice(C.N, *Axes);
  C.out(0, Out, C.in(0).Type);
  return Error::success();
}
Error evalSlice(EvalContext &C) {
  HostTensor T = *C.In[0];
  for (const SliceAxis &A : recordedSlice(C.N))
    T = T.sliced(A.Axis, A.Start, A.Step, A.Count);
  C.Out[0] = T;
  return Error::success();
}
void gradSlice(GradContext &C) {
  // dsc.SliceGrad: the slice's gradient, zeros elsewhere.
  Attributes A;
  A.set("shape", C.shape(C.input(0)));
  for (const char *K : {"dsc_axes", "dsc_starts", "dsc_steps", "dsc_counts"})
    A.set(K, *C.node().A.ints(K));
  C.setGrad(0, C.emit("dsc.SliceGrad", {C.dOut(0)}, A));
}

Error inferSliceGrad(InferContext &C) {
  if (Error E = expectInputs(C, 1, 1))
    return E;
  C.out(0, *C.N.A.ints("shape"), C.in(0).Type);
  return Error::success();
}
Error evalSliceGrad(EvalContext &C) {
  HostTensor &Out = C.fresh(0);
  HostTensor Window = Out;
  for (const SliceAxis &A : recordedSlice(C.N))
    Window = Window.sliced(A.Axis, A.Start, A.Step, A.Count);
  // Window shares Out's storage: write the gradient through it.
  std::vector<const HostTensor *> Ins = {&Window, C.In[0]};
  float *Data = Out.floatData();
  HostTensor::forEach(Window.shape(), Ins,
                      [&](int64_t, const int64_t *Off) {
                        Data[Off[0]] = float(C.In[0]->storageAt(Off[1]));
                      });
  return Error::success();
}
void gradSliceGrad(GradContext &C) {
  // The gradient of zero-padding is the slice again.
  std::vector<SliceAxis> Axes = recordedSlice(C.node());
  ValueId G = C.dOut(0);
  for (const SliceAxis &A : Axes) {
    ValueId S = C.G.addConstant(int64s({A.Start}));
    ValueId E = C.G.addConstant(int64s({A.Start + A.Step * A.Count}));
    ValueId X = C.G.addConstant(int64s({A.Axis}));
    ValueId P = C.G.addConstant(int64s({A.Step}));
    G = C.emit("Slice", {G, S, E, X, P});
  }
  C.setGrad(0, G);
}

//===----------------------------------------------------------------------===//
// Concat, Split
//===----------------------------------------------------------------------===//

Error inferConcat(InferContext &C) {
  if (C.N.Inputs.empty())
    return C.error("has no inputs");
  const Shape &First = C.shape(0);
  std::optional<int64_t> Axis =
      normalizeAxis(C.N.A.i("axis", 0), int64_t(First.size()));
  if (!Axis)
    return badAxis(C, C.N.A.i("axis", 0), First.size());
  Shape Out = First;
  Out[size_t(*Axis)] = 0;
  for (unsigned I = 0; I < C.N.Inputs.size(); ++I) {
    const Shape &S = C.shape(I);
    if (S.size() != First.size())
      return C.error("concatenates tensors of different ranks");
    for (size_t K = 0; K < S.size(); ++K)
      if (int64_t(K) != *Axis && S[K] != First[K])
        return C.error("concatenates " + shapeText(First) + " and " +
                       shapeText(S) + " along axis " + Twine(*Axis));
    Out[size_t(*Axis)] += S[size_t(*Axis)];
  }
  C.N.A.set("axis", *Axis);
  C.out(0, Out, C.in(0).Type);
  return Error::success();
}
Error evalConcat(EvalContext &C) {
  HostTensor &Out = C.fresh(0);
  int64_t Axis = C.N.A.i("axis", 0), At = 0;
  bool Float = Out.isFloat();
  for (const HostTensor *In : C.In) {
    int64_t N = In->shape()[size_t(Axis)];
    HostTensor Window = Out.sliced(Axis, At, 1, N);
    std::vector<const HostTensor *> Ins = {&Window, In};
    HostTensor::forEach(In->shape(), Ins, [&](int64_t, const int64_t *Off) {
      if (Float)
        Out.floatData()[Off[0]] = float(In->storageAt(Off[1]));
      else
        Out.intData()[Off[0]] = int64_t(In->storageAt(Off[1]));
    });
    At += N;
  }
  return Error::success();
}
void gradConcat(GradContext &C) {
  int64_t Axis = C.node().A.i("axis", 0), At = 0;
  for (unsigned I = 0; I < C.node().Inputs.size(); ++I) {
    int64_t N = C.shape(C.input(I))[size_t(Axis)];
    if (C.needs(I)) {
      ValueId S = C.G.addConstant(int64s({At}));
      ValueId E = C.G.addConstant(int64s({At + N}));
      ValueId X = C.G.addConstant(int64s({Axis}));
      C.setGrad(I, C.emit("Slice", {C.dOut(0), S, E, X}));
    }
    At += N;
  }
}

Error inferSplit(InferContext &C) {
  if (Error E = expectInputs(C, 1, 2))
    return E;
  const Shape &X = C.shape(0);
  std::optional<int64_t> Axis =
      normalizeAxis(C.N.A.i("axis", 0), int64_t(X.size()));
  if (!Axis)
    return badAxis(C, C.N.A.i("axis", 0), X.size());
  int64_t Dim = X[size_t(*Axis)];
  size_t N = C.N.Outputs.size();
  std::vector<int64_t> Sizes;
  if (std::optional<std::vector<int64_t>> S = C.N.A.ints("split"))
    Sizes = *S;
  else if (C.has(1)) {
    auto S = C.ints(1, "the split sizes");
    if (!S)
      return S.takeError();
    Sizes = *S;
  } else {
    // Equal parts; the last one smaller when the dim does not divide.
    int64_t Part = (Dim + int64_t(N) - 1) / int64_t(N);
    for (size_t K = 0; K < N; ++K)
      Sizes.push_back(std::min(Part, Dim - Part * int64_t(K)));
  }
  if (Sizes.size() != N ||
      std::accumulate(Sizes.begin(), Sizes.end(), int64_t(0)) != Dim)
    return C.error("splits a dimension of " + Twine(Dim) + " into " +
                   shapeText(Sizes) + " for " + Twine(N) + " outputs");
  C.N.A.set("axis", *Axis).set("split", Sizes);
  for (size_t K = 0; K < N; ++K) {
    Shape Out = X;
    Out[size_t(*Axis)] = Sizes[K];
    C.out(unsigned(K), Out, C.in(0).Type);
  }
  return Error::success();
}
Error evalSplit(EvalContext &C) {
  int64_t Axis = C.N.A.i("axis", 0), At = 0;
  std::vector<int64_t> Sizes = *C.N.A.ints("split");
  for (size_t K = 0; K < Sizes.size(); ++K) {
    C.Out[K] = C.In[0]->sliced(Axis, At, 1, Sizes[K]);
    At += Sizes[K];
  }
  return Error::success();
}
void gradSplit(GradContext &C) {
  std::vector<ValueId> Parts;
  for (unsigned K = 0; K < C.node().Outputs.size(); ++K) {
    ValueId G = C.dOut(K);
    if (G == NoValue) { // An unused part: zeros of its shape.
      Shape S = C.shape(C.output(K));
      G = C.G.addConstant(
          HostTensor::scalar(DType::F32, 0).expanded(S));
    }
    Parts.push_back(G);
  }
  Attributes A;
  A.set("axis", C.node().A.i("axis", 0));
  C.setGrad(0, C.emit("Concat", Parts, A));
}

//===----------------------------------------------------------------------===//
// Gather (embedding lookups and index selection), GatherND, GatherElements
//===----------------------------------------------------------------------===//

Error inferGather(InferContext &C) {
  if (Error E = expectInputs(C, 2, 2))
    return E;
  const Shape &X = C.shape(0), &Idx = C.shape(1);
  std::optional<int64_t> Axis =
      normalizeAxis(C.N.A.i("axis", 0), int64_t(X.size()));
  if (!Axis)
    return badAxis(C, C.N.A.i("axis", 0), X.size());
  if (C.in(1).isFloat())
    return C.error("gathers with floating-point indices");
  // Indices known now (a learned position table read at positions 0 to
  // the sequence's length) must be inside the table: the kernels do not
  // check.
  if (const HostTensor *Known = C.constant(1)) {
    int64_t Dim = X[size_t(*Axis)];
    for (int64_t I : Known->ints())
      if (I < -Dim || I >= Dim)
        return C.error("reads index " + Twine(I) + " of a dimension of " +
                       Twine(Dim) +
                       " (a sequence longer than the model's positions? "
                       "check --seq-len)");
  }
  Shape Out(X.begin(), X.begin() + *Axis);
  Out.insert(Out.end(), Idx.begin(), Idx.end());
  Out.insert(Out.end(), X.begin() + *Axis + 1, X.end());
  C.N.A.set("axis", *Axis);
  C.out(0, Out, C.in(0).Type);
  return Error::success();
}

/// The [outer, dim, inner] view of a gathered tensor of shape S.
std::tuple<int64_t, int64_t, int64_t> gatherView(const Shape &S,
                                                 int64_t Axis) {
  return {numel(ArrayRef<int64_t>(S).take_front(size_t(Axis))),
          S[size_t(Axis)],
          numel(ArrayRef<int64_t>(S).drop_front(size_t(Axis) + 1))};
}

Error evalGather(EvalContext &C) {
  HostTensor &Out = C.fresh(0);
  std::vector<int64_t> Idx = C.In[1]->ints();
  auto [Outer, Dim, Inner] = gatherView(C.In[0]->shape(), C.N.A.i("axis", 0));
  if (!C.In[0]->isFloat()) { // Shapes and indices: exact, in int64.
    std::vector<int64_t> X = C.In[0]->ints();
    int64_t Count = int64_t(Idx.size());
    for (int64_t O = 0; O < Outer; ++O)
      for (int64_t J = 0; J < Count; ++J) {
        int64_t K = Idx[size_t(J)] < 0 ? Idx[size_t(J)] + Dim : Idx[size_t(J)];
        if (K < 0 || K >= Dim)
          return C.error("an index is outside the gathered dimension of " +
                         Twine(Dim));
        for (int64_t I = 0; I < Inner; ++I)
          Out.intData()[(O * Count + J) * Inner + I] =
              X[size_t((O * Dim + K) * Inner + I)];
      }
    return Error::success();
  }
  HostTensor X = C.In[0]->contiguousCopy().cast(DType::F32);
  HostTensor R(DType::F32, Out.shape());
  if (!reference::gather(X.floatData(), Idx.data(), R.floatData(), Outer, Dim,
                         Inner, int64_t(Idx.size())))
    return C.error("an index is outside the gathered dimension of " +
                   Twine(Dim));
  Out = R.cast(C.outValue(0).Type);
  return Error::success();
}

void gradGather(GradContext &C) {
  Attributes A;
  A.set("axis", C.node().A.i("axis", 0)).set("shape", C.shape(C.input(0)));
  C.setGrad(0, C.emit("dsc.GatherGrad", {C.input(1), C.dOut(0)}, A));
}

/// dsc.GatherGrad(indices, dy) {axis, shape}: dy scattered back and summed
/// where an index repeats (an embedding's gradient).
Error inferGatherGrad(InferContext &C) {
  if (Error E = expectInputs(C, 2, 2))
    return E;
  C.out(0, *C.N.A.ints("shape"), C.in(1).Type);
  return Error::success();
}
Error evalGatherGrad(EvalContext &C) {
  HostTensor &Out = C.fresh(0);
  HostTensor Dy = C.In[1]->contiguousCopy();
  std::vector<int64_t> Idx = C.In[0]->ints();
  auto [Outer, Dim, Inner] = gatherView(C.outValue(0).Dims, C.N.A.i("axis", 0));
  if (!reference::gatherGrad(Idx.data(), Dy.floatData(), Out.floatData(),
                             Outer, Dim, Inner, int64_t(Idx.size())))
    return C.error("an index is outside the gathered dimension");
  return Error::success();
}

Error inferGatherND(InferContext &C) {
  if (Error E = expectInputs(C, 2, 2))
    return E;
  if (C.N.A.i("batch_dims", 0) != 0)
    return C.error("has batch_dims, which dsc does not fold");
  const Shape &X = C.shape(0), &I = C.shape(1);
  if (I.empty() || I.back() > int64_t(X.size()))
    return C.error("its index tuples are longer than the data's rank");
  Shape Out(I.begin(), I.end() - 1);
  Out.insert(Out.end(), X.begin() + I.back(), X.end());
  C.out(0, Out, C.in(0).Type);
  return Error::success();
}
Error evalGatherND(EvalContext &C) {
  HostTensor &Out = C.fresh(0);
  const HostTensor &X = *C.In[0];
  std::vector<int64_t> Idx = C.In[1]->ints();
  int64_t M = C.In[1]->shape().back();
  int64_t Tuples = numel(C.In[1]->shape()) / std::max<int64_t>(M, 1);
  int64_t Inner = numel(ArrayRef<int64_t>(X.shape()).drop_front(size_t(M)));
  std::vector<int64_t> At(X.shape().size(), 0);
  for (int64_t T = 0; T < Tuples; ++T) {
    for (int64_t K = 0; K < M; ++K) {
      int64_t V = Idx[size_t(T * M + K)], D = X.shape()[size_t(K)];
      At[size_t(K)] = V < 0 ? V + D : V;
      if (At[size_t(K)] < 0 || At[size_t(K)] >= D)
        return C.error("an index is outside the data");
    }
    for (int64_t Q = 0; Q < Inner; ++Q) {
      int64_t Rest = Q;
      for (size_t K = X.shape().size(); K-- > size_t(M);) {
        At[K] = Rest % X.shape()[K];
        Rest /= X.shape()[K];
      }
      Out.set(T * Inner + Q, X.at(At));
    }
  }
  return Error::success();
}

Error inferGatherElements(InferContext &C) {
  if (Error E = expectInputs(C, 2, 2))
    return E;
  const Shape &X = C.shape(0), &I = C.shape(1);
  int64_t Rank = int64_t(X.size()), Axis = C.N.A.i("axis", 0);
  if (Axis < -Rank || Axis >= Rank)
    return C.error("axis " + std::to_string(Axis) + " is outside " +
                   shapeText(X));
  Axis = Axis < 0 ? Axis + Rank : Axis;
  bool Fits = I.size() == X.size();
  for (int64_t K = 0; Fits && K < Rank; ++K)
    Fits = K == Axis || I[size_t(K)] <= X[size_t(K)];
  if (!Fits)
    return C.error("indices " + shapeText(I) + " do not index " +
                   shapeText(X) + " element by element");
  C.out(0, I, C.in(0).Type);
  return Error::success();
}
Error evalGatherElements(EvalContext &C) {
  HostTensor &Out = C.fresh(0);
  const HostTensor &X = *C.In[0], &I = *C.In[1];
  int64_t Axis = C.N.A.i("axis", 0);
  if (Axis < 0)
    Axis += X.rank();
  std::vector<int64_t> At(size_t(I.rank()));
  for (int64_t F = 0; F < I.numel(); ++F) {
    int64_t Rest = F;
    for (size_t K = At.size(); K-- > 0;) {
      At[K] = Rest % I.shape()[K];
      Rest /= I.shape()[K];
    }
    int64_t V = int64_t(I.at(F)), D = X.shape()[size_t(Axis)];
    if (V < -D || V >= D)
      return C.error("index " + std::to_string(V) + " is outside the " +
                     std::to_string(D) + " elements of axis " +
                     std::to_string(Axis));
    At[size_t(Axis)] = V < 0 ? V + D : V;
    Out.set(F, X.at(At));
  }
  return Error::success();
}

//===----------------------------------------------------------------------===//
// CumSum, Trilu, Tile, ScatterND (folded masks)
//===----------------------------------------------------------------------===//

Error inferSameAsFirst(InferContext &C) {
  if (!C.has(0))
    return C.error("input 0 is missing");
  C.out(0, C.shape(0), C.in(0).Type);
  return Error::success();
}

Error evalCumSum(EvalContext &C) {
  HostTensor &Out = C.fresh(0);
  HostTensor X = C.In[0]->contiguousCopy();
  int64_t Axis = int64_t(C.In[1]->at(0));
  if (Axis < 0)
    Axis += X.rank();
  bool Exclusive = C.N.A.i("exclusive", 0), Reverse = C.N.A.i("reverse", 0);
  const Shape &S = X.shape();
  int64_t Dim = S[size_t(Axis)];
  int64_t Post = numel(ArrayRef<int64_t>(S).drop_front(size_t(Axis) + 1));
  int64_t Pre = numel(ArrayRef<int64_t>(S).take_front(size_t(Axis)));
  for (int64_t P = 0; P < Pre; ++P)
    for (int64_t Q = 0; Q < Post; ++Q) {
      double Sum = 0;
      for (int64_t J = 0; J < Dim; ++J) {
        int64_t K = Reverse ? Dim - 1 - J : J;
        int64_t F = (P * Dim + K) * Post + Q;
        double V = X.at(F);
        if (!Exclusive)
          Sum += V;
        Out.set(F, Sum);
        if (Exclusive)
          Sum += V;
      }
    }
  return Error::success();
}

Error evalTrilu(EvalContext &C) {
  // Row by row: a row keeps one run of columns, the rest stays zero. A
  // causal model's mask is a Trilu of one value broadcast over the
  // sequence squared (16 M elements at 4,096 tokens): that value is read
  // once, not element by element.
  HostTensor &Out = C.fresh(0);
  const HostTensor &X = *C.In[0];
  int64_t K = C.In.size() > 1 && C.In[1] ? int64_t(C.In[1]->at(0)) : 0;
  bool Upper = C.N.A.i("upper", 1);
  const Shape &S = X.shape();
  int64_t Rows = S[S.size() - 2], Cols = S.back(), N = X.numel();
  if (N == 0)
    return Error::success();
  bool Uniform = true;
  for (size_t D = 0; D < S.size(); ++D)
    Uniform &= S[D] == 1 || X.strides()[D] == 0;
  HostTensor Dense = Uniform ? X : X.contiguousCopy();
  bool Float = X.isFloat();
  float *OutF = Float ? Out.floatData() : nullptr;
  int64_t *OutI = Float ? nullptr : Out.intData();
  const float *InF = Float && !Uniform ? Dense.floatData() : nullptr;
  const int64_t *InI = !Float && !Uniform ? Dense.intData() : nullptr;
  double Value = Uniform ? X.at(0) : 0.0;
  for (int64_t Start = 0; Start < N; Start += Cols) {
    int64_t Row = (Start / Cols) % Rows;
    int64_t Lo = Upper ? std::clamp<int64_t>(Row + K, 0, Cols) : 0;
    int64_t Hi = Upper ? Cols : std::clamp<int64_t>(Row + K + 1, 0, Cols);
    if (Lo >= Hi)
      continue;
    if (Float && Uniform)
      std::fill(OutF + Start + Lo, OutF + Start + Hi, float(Value));
    else if (Float)
      std::copy(InF + Start + Lo, InF + Start + Hi, OutF + Start + Lo);
    else if (Uniform)
      std::fill(OutI + Start + Lo, OutI + Start + Hi, int64_t(Value));
    else
      std::copy(InI + Start + Lo, InI + Start + Hi, OutI + Start + Lo);
  }
  return Error::success();
}

Error inferTile(InferContext &C) {
  if (Error E = expectInputs(C, 2, 2))
    return E;
  auto R = C.ints(1, "the repeats");
  if (!R)
    return R.takeError();
  Shape Out = C.shape(0);
  if (R->size() != Out.size())
    return C.error("has repeats of the wrong length");
  for (size_t K = 0; K < Out.size(); ++K)
    Out[K] *= (*R)[K];
  C.out(0, Out, C.in(0).Type);
  return Error::success();
}
Error evalTile(EvalContext &C) {
  HostTensor &Out = C.fresh(0);
  const HostTensor &X = *C.In[0];
  const Shape &S = X.shape(), &O = C.outValue(0).Dims;
  std::vector<int64_t> At(S.size());
  for (int64_t F = 0; F < numel(O); ++F) {
    int64_t Rest = F;
    for (size_t K = O.size(); K-- > 0;) {
      At[K] = (Rest % O[K]) % S[K];
      Rest /= O[K];
    }
    Out.set(F, X.at(At));
  }
  return Error::success();
}

Error evalScatterND(EvalContext &C) {
  HostTensor &Out = C.fresh(0);
  const HostTensor &X = *C.In[0];
  for (int64_t F = 0; F < X.numel(); ++F)
    Out.set(F, X.at(F));
  std::vector<int64_t> Idx = C.In[1]->ints();
  int64_t M = C.In[1]->shape().back();
  int64_t Tuples = C.In[1]->numel() / std::max<int64_t>(M, 1);
  const Shape &S = X.shape();
  int64_t Inner = numel(ArrayRef<int64_t>(S).drop_front(size_t(M)));
  Shape Strides = contiguousStrides(S);
  HostTensor U = C.In[2]->contiguousCopy();
  for (int64_t T = 0; T < Tuples; ++T) {
    int64_t Base = 0;
    for (int64_t K = 0; K < M; ++K) {
      int64_t V = Idx[size_t(T * M + K)];
      Base += (V < 0 ? V + S[size_t(K)] : V) * Strides[size_t(K)];
    }
    for (int64_t Q = 0; Q < Inner; ++Q)
      Out.set(Base + Q, U.at(T * Inner + Q));
  }
  return Error::success();
}

Error inferConstant(InferContext &C) {
  return C.error("is a Constant: the importer makes it a value");
}

const OpDef Ops[] = {
    {"Shape", inferShape, evalShape, nullptr, NoGradient, "the dims of x"},
    {"Size", inferSize, evalSize, nullptr, NoGradient, "the elements of x"},
    {"Constant", inferConstant, nullptr, nullptr, NoGradient, "a literal"},
    {"ConstantOfShape", inferConstantOfShape, evalConstantOfShape, nullptr, 0,
     "a tensor of one value"},
    {"Range", inferRange, evalRange, nullptr, NoGradient, "start, start+d, ..."},
    {"Reshape", inferReshape, evalView, gradReshapeLike, ViewOp,
     "x under another shape", lowerView},
    {"Flatten", inferFlatten, evalView, gradReshapeLike, ViewOp,
     "x as a matrix", lowerView},
    {"Squeeze", inferSqueeze, evalView, gradReshapeLike, ViewOp,
     "x without dims of size 1", lowerView},
    {"Unsqueeze", inferUnsqueeze, evalView, gradReshapeLike, ViewOp,
     "x with dims of size 1 added", lowerView},
    {"Transpose", inferTranspose, evalTranspose, gradTranspose, ViewOp,
     "x with its dims permuted", lowerView},
    {"Expand", inferExpand, evalExpand, gradExpand, ViewOp,
     "x broadcast to a shape", lowerView},
    {"Slice", inferSlice, evalSlice, gradSlice, ViewOp,
     "a strided window of x", lowerView},
    {"dsc.SliceGrad", inferSliceGrad, evalSliceGrad, gradSliceGrad, 0,
     "dy placed in its slice of zeros", lowerSliceGrad},
    {"Concat", inferConcat, evalConcat, gradConcat, 0,
     "tensors joined along an axis", lowerConcat},
    {"Split", inferSplit, evalSplit, gradSplit, ViewOp,
     "x cut into parts along an axis", lowerView},
    {"Gather", inferGather, evalGather, gradGather, 0,
     "x indexed along an axis (embedding lookups)", lowerGather},
    {"dsc.GatherGrad", inferGatherGrad, evalGatherGrad, nullptr, 0,
     "dy scattered back to the gathered rows, summed", lowerGather},
    {"GatherND", inferGatherND, evalGatherND, nullptr, 0,
     "x indexed by index tuples"},
    {"GatherElements", inferGatherElements, evalGatherElements, nullptr, 0,
     "x indexed element by element"},
    {"CumSum", inferSameAsFirst, evalCumSum, nullptr, 0,
     "running sums along an axis"},
    {"Trilu", inferSameAsFirst, evalTrilu, nullptr, 0,
     "the upper or lower triangle"},
    {"Tile", inferTile, evalTile, nullptr, 0, "x repeated"},
    {"ScatterND", inferSameAsFirst, evalScatterND, nullptr, 0,
     "x with index tuples overwritten"},
};

} // namespace

ArrayRef<OpDef> shapeOps() { return Ops; }

} // namespace dsc::compute
