//===- Rows.cpp - Reduce, softmax and norm kinds --------------------------===//
//
// Kinds that work along rows: a reduction over some dims, softmax and the
// norms over the last one. Their operands are dense rows (the lowering
// copies what is not), so a kernel's rows x cols must be what each
// operand holds.
//
//===----------------------------------------------------------------------===//

#include "KindSupport.h"

#include "dsc/ColumnSums.h"

namespace dsc::plan::kinds {

namespace {

//===----------------------------------------------------------------------===//
// Reduce
//===----------------------------------------------------------------------===//

std::string checkReduce(const Kernel &K, const ReduceAttrs &A,
                        const std::vector<Value> &) {
  if (std::string Bad = operandCounts(K, 1, 1); !Bad.empty())
    return Bad;
  const TensorRef &X = K.Inputs[0];
  if (X.Shape.size() > 8 || (A.AxesMask >> X.Shape.size()) != 0)
    return "reduces dims its input does not have";
  int64_t Kept = 1;
  for (size_t D = 0; D < X.Shape.size(); ++D)
    if (!(A.AxesMask >> D & 1))
      Kept *= X.Shape[D];
  if (elements(K.Outputs[0]) != Kept)
    return "has an output that is not its input's kept elements";
  return "";
}

/// A bias gradient (a sum over leading rows) runs on the whole GPU in two
/// passes, through the column sums' workspace.
void costReduce(Kernel &K, const ReduceAttrs &A, const std::vector<Value> &) {
  elementCost(K);
  int64_t Rows = 0, Cols = 0;
  const TensorRef &X = K.Inputs[0];
  if (reducesLeadingRows(X.Shape, X.Strides, int64_t(A.AxesMask), Rows, Cols))
    K.WorkspaceBytes = columnSumWorkspace(Rows, Cols, 1);
}

std::string referenceReduce(const Kernel &K, const ReduceAttrs &A,
                            HostOperands &Ops) {
  const TensorRef &X = K.Inputs[0], &Y = K.Outputs[0];
  std::vector<double> Acc(size_t(elements(Y)), 0.0);
  for (int64_t E = 0; E < elements(X); ++E) {
    int64_t Rest = E, Dst = 0, Stride = 1;
    for (size_t D = X.Shape.size(); D-- > 0;) {
      int64_t Ix = Rest % X.Shape[D];
      Rest /= X.Shape[D];
      bool Summed = A.AxesMask >> D & 1;
      if (!Summed)
        Dst += Ix * Stride;
      Stride *= Summed ? 1 : X.Shape[D];
    }
    Acc[size_t(Dst)] += Ops.input(0, E);
  }
  std::vector<float> R(Acc.size());
  for (size_t J = 0; J < Acc.size(); ++J)
    R[J] = float(Acc[J] * A.Scale);
  Ops.store(0, R);
  return "";
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

std::string checkSoftmax(const Kernel &K, const SoftmaxAttrs &A,
                         const std::vector<Value> &) {
  if (std::string Bad = operandCounts(K, 1, 1); !Bad.empty())
    return Bad;
  if (!holdRows({&K.Inputs[0], &K.Outputs[0]}, A.Rows, A.Cols))
    return "has operands that are not rows x cols elements";
  return "";
}

std::string referenceSoftmax(const Kernel &, const SoftmaxAttrs &A,
                             HostOperands &Ops) {
  std::vector<float> X = Ops.load(0), Y(X.size());
  reference::softmax(X.data(), Y.data(), A.Rows, A.Cols, A.Log,
                     A.ZeroMaskedRows);
  Ops.store(0, Y);
  return "";
}

std::string checkSoftmaxGrad(const Kernel &K, const SoftmaxGradAttrs &A,
                             const std::vector<Value> &) {
  if (std::string Bad = operandCounts(K, 2, 1); !Bad.empty())
    return Bad;
  if (!holdRows({&K.Inputs[0], &K.Inputs[1], &K.Outputs[0]}, A.Rows, A.Cols))
    return "has operands that are not rows x cols elements";
  return "";
}

std::string referenceSoftmaxGrad(const Kernel &, const SoftmaxGradAttrs &A,
                                 HostOperands &Ops) {
  std::vector<float> Y = Ops.load(0), G = Ops.load(1), D(Y.size());
  reference::softmaxGrad(Y.data(), G.data(), D.data(), A.Rows, A.Cols, A.Log);
  Ops.store(0, D);
  return "";
}

//===----------------------------------------------------------------------===//
// Norms
//===----------------------------------------------------------------------===//

/// x (with the residual add: the two addends and the stored sum) holds
/// rows x cols elements, and the sum is a value of its own.
std::string checkNorm(const Kernel &K, const LayerNormAttrs &A,
                      const std::vector<Value> &) {
  bool Rms = K.kind() == KernelKind::RMSNorm;
  size_t R = A.Residual;
  std::string Bad = Rms ? operandCounts(K, 2 + R, 2 + R)
                        : operandCounts(K, 2 + R, 3 + R, 3 + R, 3 + R);
  if (!Bad.empty())
    return Bad;
  const TensorRef &Sum = R ? K.Outputs.back() : K.Inputs[0];
  if (!holdRows({&K.Inputs[0], &K.Inputs[R], &K.Outputs[0], &Sum}, A.Rows,
                A.Cols))
    return "has norm operands that are not rows x cols elements";
  if (R && (K.Outputs.back().Value == K.Inputs[0].Value ||
            K.Outputs.back().Value == K.Inputs[1].Value))
    return "stores a residual sum over one of its addends";
  return "";
}

std::string referenceNorm(const Kernel &K, const LayerNormAttrs &A,
                          HostOperands &Ops) {
  bool Rms = K.kind() == KernelKind::RMSNorm;
  // With the residual add: x = in0 + in1, rounded as stored, and kept.
  size_t R = A.Residual;
  std::vector<float> X = Ops.load(0), W = Ops.load(1 + R), B, Y(X.size()),
                     Mean(size_t(A.Rows)), Rstd(size_t(A.Rows));
  if (R) {
    std::vector<float> X2 = Ops.load(1);
    plan::DType T = Ops.outputType(K.Outputs.size() - 1);
    for (size_t J = 0; J < X.size(); ++J)
      X[J] = reference::storedAs(double(X[J]) + double(X2[J]), T);
    Ops.store(K.Outputs.size() - 1, X);
  }
  if (Rms) {
    reference::rmsNorm(X.data(), W.data(), Y.data(), Rstd.data(), A.Rows,
                       A.Cols, A.Epsilon);
    Ops.store(0, Y);
    Ops.store(1, Rstd);
    return "";
  }
  if (K.Inputs.size() > 2 + R)
    B = Ops.load(2 + R);
  reference::layerNorm(X.data(), W.data(), B.empty() ? nullptr : B.data(),
                       Y.data(), Mean.data(), Rstd.data(), A.Rows, A.Cols,
                       A.Epsilon);
  Ops.store(0, Y);
  Ops.store(1, Mean);
  Ops.store(2, Rstd);
  return "";
}

/// dy, x (and with the residual add, the stream's gradient) hold rows x
/// cols elements.
std::string checkNormGrad(const Kernel &K, const LayerNormGradAttrs &A,
                          const std::vector<Value> &) {
  bool Rms = K.kind() == KernelKind::RMSNormGrad;
  size_t In = (Rms ? 4 : 5) + A.Residual;
  if (std::string Bad = operandCounts(K, In, Rms ? 2 : 3); !Bad.empty())
    return Bad;
  const TensorRef &Stream = A.Residual ? K.Inputs.back() : K.Inputs[0];
  if (!holdRows({&K.Inputs[0], &K.Inputs[1], &Stream, &K.Outputs[0]}, A.Rows,
                A.Cols))
    return "has norm operands that are not rows x cols elements";
  return "";
}

/// The weight (and bias) gradients' partial column sums.
void costNormGrad(Kernel &K, const LayerNormGradAttrs &A,
                  const std::vector<Value> &) {
  elementCost(K);
  K.WorkspaceBytes = columnSumWorkspace(
      A.Rows, A.Cols, K.kind() == KernelKind::LayerNormGrad ? 2 : 1);
}

std::string referenceNormGrad(const Kernel &K, const LayerNormGradAttrs &A,
                              HostOperands &Ops) {
  bool Rms = K.kind() == KernelKind::RMSNormGrad;
  std::vector<float> Dy = Ops.load(0), X = Ops.load(1), W = Ops.load(2),
                     S3 = Ops.load(3);
  std::vector<float> S4 = Rms ? S3 : Ops.load(4);
  std::vector<float> Dx(X.size()), Dw(W.size()), Db(W.size());
  reference::layerNormGrad(Dy.data(), X.data(), W.data(),
                           Rms ? nullptr : S3.data(), S4.data(), Dx.data(),
                           Dw.data(), Db.data(), A.Rows, A.Cols);
  if (A.Residual) {
    // The stream's gradient added to dx, each rounded as stored.
    std::vector<float> G = Ops.load(K.Inputs.size() - 1);
    plan::DType T = Ops.outputType(0);
    for (size_t J = 0; J < Dx.size(); ++J)
      Dx[J] = reference::storedAs(
          double(reference::storedAs(Dx[J], T)) + double(G[J]), T);
  }
  Ops.store(0, Dx);
  Ops.store(1, Dw);
  if (!Rms)
    Ops.store(2, Db);
  return "";
}

} // namespace

extern const KernelKindInfo ReduceKind =
    kindEntry<ReduceAttrs, ReduceAttrs, checkReduce, costReduce,
              referenceReduce>("elementwise");
extern const KernelKindInfo SoftmaxKind =
    kindEntry<SoftmaxAttrs, SoftmaxAttrs, checkSoftmax,
              noWorkspace<SoftmaxAttrs>, referenceSoftmax>("elementwise");
extern const KernelKindInfo SoftmaxGradKind =
    kindEntry<SoftmaxGradAttrs, SoftmaxGradAttrs, checkSoftmaxGrad,
              noWorkspace<SoftmaxGradAttrs>, referenceSoftmaxGrad>("elementwise");
extern const KernelKindInfo LayerNormKind =
    kindEntry<LayerNormAttrs, LayerNormAttrs, checkNorm,
              noWorkspace<LayerNormAttrs>, referenceNorm>("norm");
extern const KernelKindInfo RMSNormKind =
    kindEntry<RMSNormAttrs, LayerNormAttrs, checkNorm,
              noWorkspace<LayerNormAttrs>, referenceNorm>("norm");
extern const KernelKindInfo LayerNormGradKind =
    kindEntry<LayerNormGradAttrs, LayerNormGradAttrs, checkNormGrad,
              costNormGrad, referenceNormGrad>("norm");
extern const KernelKindInfo RMSNormGradKind =
    kindEntry<RMSNormGradAttrs, LayerNormGradAttrs, checkNormGrad,
              costNormGrad, referenceNormGrad>("norm");

} // namespace dsc::plan::kinds
