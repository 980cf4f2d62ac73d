//===- OpsMath.cpp - Matrix products, softmax, reductions -----------------===//

#include "dsc/Compute/Lowering.h"
#include "dsc/Compute/Ops.h"
#include "dsc/ReferenceKernels.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace llvm;

namespace dsc::compute {

namespace {

//===----------------------------------------------------------------------===//
// MatMul (numpy semantics; batch dims broadcast)
//===----------------------------------------------------------------------===//

Error inferMatMul(InferContext &C) {
  if (C.N.Inputs.size() != 2 || !C.has(0) || !C.has(1))
    return C.error("takes 2 inputs");
  Shape A = C.shape(0), B = C.shape(1);
  if (A.empty() || B.empty())
    return C.error("multiplies a scalar");
  bool VecA = A.size() == 1, VecB = B.size() == 1;
  if (VecA)
    A.insert(A.begin(), 1);
  if (VecB)
    B.push_back(1);
  if (A.back() != B[B.size() - 2])
    return C.error("multiplies " + shapeText(C.shape(0)) + " by " +
                   shapeText(C.shape(1)) + ": inner dims differ");
  std::optional<Shape> Batch =
      broadcastShapes(ArrayRef<int64_t>(A).drop_back(2),
                      ArrayRef<int64_t>(B).drop_back(2));
  if (!Batch)
    return C.error("batch dims " + shapeText(A) + " and " + shapeText(B) +
                   " do not broadcast");
  Shape Out = *Batch;
  if (!VecA)
    Out.push_back(A[A.size() - 2]);
  if (!VecB)
    Out.push_back(B.back());
  C.out(0, Out, C.in(0).Type);
  return Error::success();
}

Error evalMatMul(EvalContext &C) {
  HostTensor A = *C.In[0], B = *C.In[1];
  if (A.rank() == 1)
    A = A.reshaped({1, A.shape()[0]});
  if (B.rank() == 1)
    B = B.reshaped({B.shape()[0], 1});
  int64_t M = A.shape()[size_t(A.rank() - 2)], K = A.shape().back(),
          N = B.shape().back();
  Shape Batch = *broadcastShapes(ArrayRef<int64_t>(A.shape()).drop_back(2),
                                 ArrayRef<int64_t>(B.shape()).drop_back(2));
  Shape AS = Batch, BS = Batch;
  AS.push_back(M), AS.push_back(K);
  BS.push_back(K), BS.push_back(N);
  HostTensor AE = A.expanded(AS).contiguousCopy();
  HostTensor BE = B.expanded(BS).contiguousCopy();
  Shape OS = Batch;
  OS.push_back(M), OS.push_back(N);
  HostTensor Out(DType::F32, OS);
  const float *PA = AE.floatData(), *PB = BE.floatData();
  float *PO = Out.floatData();
  int64_t Count = numel(Batch);
  for (int64_t Bt = 0; Bt < Count; ++Bt)
    for (int64_t I = 0; I < M; ++I)
      for (int64_t J = 0; J < N; ++J) {
        double Sum = 0;
        for (int64_t L = 0; L < K; ++L)
          Sum += double(PA[(Bt * M + I) * K + L]) *
                 double(PB[(Bt * K + L) * N + J]);
        PO[(Bt * M + I) * N + J] = float(Sum);
      }
  C.Out[0] = Out.reshaped(C.outValue(0).Dims).cast(C.outValue(0).Type);
  return Error::success();
}

/// The permutation swapping the last two of Rank dims.
std::vector<int64_t> swapLast(size_t Rank) {
  std::vector<int64_t> P(Rank);
  for (size_t K = 0; K < Rank; ++K)
    P[K] = int64_t(K);
  std::swap(P[Rank - 2], P[Rank - 1]);
  return P;
}

void gradMatMul(GradContext &C) {
  ValueId A = C.input(0), B = C.input(1), G = C.dOut(0);
  Shape SA = C.shape(A), SB = C.shape(B);
  if (SA.size() < 2 || SB.size() < 2) {
    C.fail("the gradient of a matrix-vector product is not supported; "
           "export with matrices");
    return;
  }
  if (C.needs(0)) // dA = dY . B^T, summed over B's broadcast.
    C.setGrad(0, C.sumTo(C.emit("MatMul", {G, C.transpose(B, swapLast(SB.size()))}),
                         SA));
  if (!C.needs(1))
    return;
  if (SB.size() == 2 && SA.size() > 2) {
    // A weight shared by every batch: one product over all rows,
    // A2^T . dY2 with A2 = A as [rows, K], instead of one per batch.
    int64_t K = SA.back(), N = SB.back();
    int64_t Rows = numel(SA) / K;
    ValueId A2 = C.reshape(A, {Rows, K});
    ValueId G2 = C.reshape(G, {Rows, N});
    C.setGrad(1, C.emit("MatMul", {C.transpose(A2, {1, 0}), G2}));
    return;
  }
  C.setGrad(1, C.sumTo(C.emit("MatMul", {C.transpose(A, swapLast(SA.size())), G}),
                       SB));
}

//===----------------------------------------------------------------------===//
// Softmax, LogSoftmax and their gradients
//===----------------------------------------------------------------------===//

Error inferSoftmax(InferContext &C) {
  if (C.N.Inputs.size() != 1 || !C.has(0))
    return C.error("takes 1 input");
  int64_t Rank = int64_t(C.shape(0).size());
  int64_t Axis = C.N.A.i("axis", -1);
  if (Axis < 0)
    Axis += Rank;
  if (Axis < 0 || Axis >= Rank)
    return C.error("axis outside the tensor");
  // Before opset 13 the op flattened [axis:] into one dim; exporters write
  // the last axis, where both meanings agree.
  C.N.A.set("axis", Axis);
  C.out(0, C.shape(0), C.in(0).Type);
  return Error::success();
}

Error evalSoftmax(EvalContext &C) {
  // The axis is the last (exporters write it so; the kernel needs it).
  HostTensor X = C.In[0]->contiguousCopy();
  int64_t Axis = C.N.A.i("axis", -1);
  if (Axis != X.rank() - 1)
    return C.error("dsc computes softmax along the last axis only");
  HostTensor &Out = C.fresh(0);
  int64_t Cols = X.shape().back();
  reference::softmax(X.floatData(), Out.floatData(), X.numel() / Cols, Cols,
                     C.N.Op == "LogSoftmax", C.N.A.i("zero_masked_rows", 0));
  return Error::success();
}

void gradSoftmax(GradContext &C) {
  Attributes A;
  A.set("axis", C.node().A.i("axis", -1));
  C.setGrad(0, C.emit(C.node().Op == "LogSoftmax" ? "dsc.LogSoftmaxGrad"
                                                  : "dsc.SoftmaxGrad",
                      {C.output(0), C.dOut(0)}, A));
}

/// dsc.SoftmaxGrad(y, dy): y * (dy - sum(dy * y)); dsc.LogSoftmaxGrad(y,
/// dy): dy - exp(y) * sum(dy), along the axis.
Error inferSoftmaxGrad(InferContext &C) {
  if (C.N.Inputs.size() != 2)
    return C.error("takes 2 inputs");
  C.out(0, C.shape(0), C.in(1).Type);
  return Error::success();
}
Error evalSoftmaxGrad(EvalContext &C) {
  HostTensor Y = C.In[0]->contiguousCopy(), G = C.In[1]->contiguousCopy();
  HostTensor &Out = C.fresh(0);
  int64_t Cols = Y.shape().back();
  reference::softmaxGrad(Y.floatData(), G.floatData(), Out.floatData(),
                         Y.numel() / Cols, Cols,
                         C.N.Op == "dsc.LogSoftmaxGrad");
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// The reduced axes (sorted, non-negative), from the attribute or input 1.
Expected<std::vector<int64_t>> reducedAxes(InferContext &C) {
  int64_t Rank = int64_t(C.shape(0).size());
  std::vector<int64_t> Axes;
  if (std::optional<std::vector<int64_t>> A = C.N.A.ints("axes"))
    Axes = *A;
  else if (C.has(1)) {
    auto V = C.ints(1, "the axes");
    if (!V)
      return V.takeError();
    Axes = *V;
  }
  if (Axes.empty() && !C.N.A.i("noop_with_empty_axes", 0))
    for (int64_t K = 0; K < Rank; ++K)
      Axes.push_back(K);
  for (int64_t &A : Axes) {
    if (A < 0)
      A += Rank;
    if (A < 0 || A >= Rank)
      return C.error("reduces axis " + Twine(A) + " of a tensor of rank " +
                     Twine(Rank));
  }
  llvm::sort(Axes);
  Axes.erase(std::unique(Axes.begin(), Axes.end()), Axes.end());
  return Axes;
}

Error inferReduce(InferContext &C) {
  if (C.N.Inputs.empty() || !C.has(0) || C.N.Inputs.size() > 2)
    return C.error("takes 1 or 2 inputs");
  auto Axes = reducedAxes(C);
  if (!Axes)
    return Axes.takeError();
  bool Keep = C.N.A.i("keepdims", 1);
  Shape Out;
  const Shape &X = C.shape(0);
  for (size_t K = 0; K < X.size(); ++K) {
    if (!is_contained(*Axes, int64_t(K)))
      Out.push_back(X[K]);
    else if (Keep)
      Out.push_back(1);
  }
  // Recorded normalized, so evaluation and gradients read attributes only.
  C.N.A.set("axes", *Axes).set("keepdims", Keep ? 1 : 0);
  C.out(0, Out, C.in(0).Type);
  return Error::success();
}

Error evalReduce(EvalContext &C) {
  const HostTensor &X = *C.In[0];
  std::vector<int64_t> Axes = *C.N.A.ints("axes");
  Shape Kept = X.shape();
  for (int64_t A : Axes)
    Kept[size_t(A)] = 1;
  StringRef Op = C.N.Op;
  bool Max = Op == "ReduceMax", Min = Op == "ReduceMin";
  std::vector<double> Acc(size_t(numel(Kept)),
                          Max ? -INFINITY : Min ? INFINITY : 0.0);
  Shape KS = contiguousStrides(Kept);
  std::vector<int64_t> Index(X.shape().size());
  HostTensor::forEach(X.shape(), {&X}, [&](int64_t Flat, const int64_t *Off) {
    int64_t Rest = Flat, Dst = 0;
    for (size_t K = X.shape().size(); K-- > 0;) {
      int64_t I = Rest % X.shape()[K];
      Rest /= X.shape()[K];
      if (Kept[K] != 1 || X.shape()[K] == 1)
        Dst += (Kept[K] == 1 ? 0 : I) * KS[K];
    }
    double V = X.storageAt(Off[0]);
    double &A = Acc[size_t(Dst)];
    A = Max ? std::max(A, V) : Min ? std::min(A, V) : A + V;
  });
  int64_t Count = numel(X.shape()) / std::max<int64_t>(numel(Kept), 1);
  HostTensor &Out = C.fresh(0);
  for (size_t K = 0; K < Acc.size(); ++K)
    Out.set(int64_t(K), Op == "ReduceMean" ? Acc[K] / double(Count) : Acc[K]);
  return Error::success();
}

void gradReduce(GradContext &C) {
  ValueId X = C.input(0);
  Shape S = C.shape(X);
  Shape Kept = S;
  std::vector<int64_t> Axes = *C.node().A.ints("axes");
  for (int64_t A : Axes)
    Kept[size_t(A)] = 1;
  ValueId G = C.reshape(C.dOut(0), Kept);
  if (C.node().Op == "ReduceMean")
    G = C.div(G, C.scalar(double(numel(S) / std::max<int64_t>(numel(Kept), 1))));
  ValueId Target = C.G.addConstant(
      HostTensor::fromInts(DType::I64, {int64_t(S.size())}, S));
  C.setGrad(0, C.emit("Expand", {G, Target}));
}

const OpDef Ops[] = {
    {"MatMul", inferMatMul, evalMatMul, gradMatMul, 0,
     "matrix product, batch dims broadcast", lowerMatMul},
    {"Softmax", inferSoftmax, evalSoftmax, gradSoftmax, 0,
     "softmax along an axis", lowerSoftmax},
    {"LogSoftmax", inferSoftmax, evalSoftmax, gradSoftmax, 0,
     "log-softmax along an axis", lowerSoftmax},
    {"dsc.SoftmaxGrad", inferSoftmaxGrad, evalSoftmaxGrad, nullptr, 0,
     "y * (dy - sum(dy * y))", lowerSoftmaxGrad},
    {"dsc.LogSoftmaxGrad", inferSoftmaxGrad, evalSoftmaxGrad, nullptr, 0,
     "dy - exp(y) * sum(dy)", lowerSoftmaxGrad},
    {"ReduceSum", inferReduce, evalReduce, gradReduce, 0, "sum over axes", lowerReduce},
    {"ReduceMean", inferReduce, evalReduce, gradReduce, 0, "mean over axes", lowerReduce},
    {"ReduceMax", inferReduce, evalReduce, nullptr, 0, "max over axes"},
    {"ReduceMin", inferReduce, evalReduce, nullptr, 0, "min over axes"},
};

} // namespace

ArrayRef<OpDef> mathOps() { return Ops; }

} // namespace dsc::compute
