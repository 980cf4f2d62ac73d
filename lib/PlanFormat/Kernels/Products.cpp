//===- Products.cpp - The gemm kind: check, cost, reference ---------------===//
//
// A product reads its operands through its own leading dimensions and
// batch strides (cuBLASLt's), not through the TensorRefs' strides; the
// check makes the two agree, so that the verifier's reach check of each
// TensorRef bounds what the product touches.
//
//===----------------------------------------------------------------------===//

#include "KindSupport.h"

#include "dsc/Pointwise.h"

namespace dsc::plan::kinds {

namespace {

/// Whether R is the [Batch, Rows, Cols] matrix at (Stride, Ld, 1).
bool isMatrix(const TensorRef &R, const GemmAttrs &A, int64_t Rows,
              int64_t Cols, int64_t Ld, int64_t Stride) {
  return R.Shape == std::vector<int64_t>{A.Batch, Rows, Cols} &&
         R.Strides[1] == Ld && R.Strides[2] == 1 &&
         (A.Batch == 1 || R.Strides[0] == Stride) && Ld >= Cols;
}

std::string checkGemm(const Kernel &K, const GemmAttrs &A,
                      const std::vector<Value> &) {
  GemmEpilogue E = A.Epilogue;
  if (std::string Bad = operandCounts(K, gemmInputs(E), gemmOutputs(E));
      !Bad.empty())
    return Bad + " for its epilogue";
  if (A.M < 0 || A.N < 0 || A.K < 0 || A.Batch < 1)
    return "has a product of a negative size";
  if (!isMatrix(K.Inputs[0], A, A.TransA ? A.K : A.M, A.TransA ? A.M : A.K,
                A.LdA, A.StrideA) ||
      !isMatrix(K.Inputs[1], A, A.TransB ? A.N : A.K, A.TransB ? A.K : A.N,
                A.LdB, A.StrideB) ||
      !isMatrix(K.Outputs[0], A, A.M, A.N, A.LdC, A.StrideC))
    return "has product operands that are not its matrices";
  // The bias is a dense [N] vector; GELU's pre-activation (kept by the
  // forward, read by the backward) is laid out as C; a bias gradient is a
  // dense vector of op(A)'s rows or op(B)'s columns.
  const std::vector<int64_t> Dense = {1};
  bool Unbatched = A.Batch == 1 && A.Beta == 0;
  if (E == GemmEpilogue::Bias || E == GemmEpilogue::BiasGeluTanh)
    if (K.Inputs[2].Shape != std::vector<int64_t>{A.N} ||
        K.Inputs[2].Strides != Dense)
      return "has a bias that is not a dense vector of N";
  if (gemmUsesPreActivation(E)) {
    const TensorRef &Aux =
        E == GemmEpilogue::BiasGeluTanh ? K.Outputs[1] : K.Inputs[2];
    if (Aux.Shape != K.Outputs[0].Shape ||
        Aux.Strides != K.Outputs[0].Strides || !Unbatched || A.LdC % 8)
      return "has a GELU pre-activation not laid out as its product";
  }
  if (gemmBiasGrad(E) &&
      (K.Outputs[1].Strides != Dense ||
       K.Outputs[1].Shape !=
           std::vector<int64_t>{E == GemmEpilogue::BiasGradA ? A.M : A.N} ||
       !Unbatched))
    return "has a bias gradient that is not a dense vector of its sums";
  return "";
}

void costGemm(Kernel &K, const GemmAttrs &A, const std::vector<Value> &V) {
  K.Flops = 2 * uint64_t(A.M) * uint64_t(A.N) * uint64_t(A.K) *
            uint64_t(A.Batch);
  K.WorkspaceBytes = GemmWorkspaceBytes;
  if (A.Beta != 0) // Adding into C reads it.
    K.Bytes += uint64_t(elements(K.Outputs[0])) *
               dtypeBytes(V[K.Outputs[0].Value].Type);
}

std::string referenceGemm(const Kernel &K, const GemmAttrs &G,
                          HostOperands &Ops) {
  const float *A = Ops.inputData(0), *B = Ops.inputData(1);
  float *C = Ops.outputData(0);
  bool Gelu = G.Epilogue == GemmEpilogue::BiasGeluTanh,
       DGelu = G.Epilogue == GemmEpilogue::DGeluTanh;
  const float *Bias = gemmUsesBias(G.Epilogue) && !gemmBiasGrad(G.Epilogue)
                          ? Ops.inputData(2)
                          : nullptr;
  // GELU's pre-activation, laid out as C: written by the forward's
  // epilogue, read by the backward's.
  float *Kept = Gelu ? Ops.outputData(1) : nullptr;
  const float *Read = DGelu ? Ops.inputData(2) : nullptr;
  for (int64_t Bt = 0; Bt < G.Batch; ++Bt)
    for (int64_t R = 0; R < G.M; ++R)
      for (int64_t Col = 0; Col < G.N; ++Col) {
        double Sum = 0;
        for (int64_t L = 0; L < G.K; ++L)
          Sum += double(G.TransA ? A[Bt * G.StrideA + L * G.LdA + R]
                                 : A[Bt * G.StrideA + R * G.LdA + L]) *
                 double(G.TransB ? B[Bt * G.StrideB + Col * G.LdB + L]
                                 : B[Bt * G.StrideB + L * G.LdB + Col]);
        int64_t At = Bt * G.StrideC + R * G.LdC + Col;
        float &Dst = C[At];
        double V = G.Alpha * Sum + (G.Beta != 0 ? G.Beta * Dst : 0.0) +
                   (Bias ? Bias[Col] : 0.0f);
        if (Gelu) {
          Kept[At] = reference::storedAs(V, Ops.outputType(1));
          V = pointwise::geluTanh(V);
        } else if (DGelu) {
          V *= pointwise::geluTanhGrad(double(Read[At]));
        }
        Dst = float(V);
      }
  // A bias gradient: op(A) summed over K for each of its M rows, or op(B)
  // for each of its N columns.
  if (gemmBiasGrad(G.Epilogue)) {
    bool OfA = G.Epilogue == GemmEpilogue::BiasGradA;
    float *Sums = Ops.outputData(1);
    for (int64_t J = 0; J < (OfA ? G.M : G.N); ++J) {
      double Sum = 0;
      for (int64_t L = 0; L < G.K; ++L)
        Sum += OfA ? double(G.TransA ? A[L * G.LdA + J] : A[J * G.LdA + L])
                   : double(G.TransB ? B[J * G.LdB + L] : B[L * G.LdB + J]);
      Sums[J] = reference::storedAs(Sum, Ops.outputType(1));
    }
  }
  return "";
}

} // namespace

extern const KernelKindInfo GemmKind =
    kindEntry<GemmAttrs, GemmAttrs, checkGemm, costGemm, referenceGemm>("product");

} // namespace dsc::plan::kinds
