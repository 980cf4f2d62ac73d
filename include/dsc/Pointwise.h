//===- Pointwise.h - One pointwise instruction, host and device -*- C++ -*-===//
//
// The arithmetic of each pointwise instruction (plan::PointwiseOp), written
// once for the host reference (in double) and dsrun's kernels (in float):
// what a fused elementwise program computes is the same function on both.
// Const and Dropout are the program runners' own. Dependency-free, and
// usable from CUDA device code.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_POINTWISE_H
#define DSC_POINTWISE_H

#include "dsc/PlanFormat.h"

#include <cmath>

#if defined(__CUDACC__)
#define DSC_POINTWISE_HD __host__ __device__ __forceinline__
#else
#define DSC_POINTWISE_HD inline
#endif

namespace dsc::pointwise {

/// What one pointwise kernel may hold: dsrun keeps the program and its
/// operands in the kernel's parameters, and the compiler's fusion stops
/// where a fused program would not fit.
constexpr int MaxInputs = 8, MaxOutputs = 4, MaxInstructions = 48,
              MaxRegisters = 32, MaxConstants = 16;

/// How many of an instruction's fields a, b, c name registers it reads
/// (Const reads Floats[a]; Dropout reads register a, Floats[b] and names
/// its stream in c).
DSC_POINTWISE_HD unsigned registerArgs(plan::PointwiseOp Op) {
  using P = plan::PointwiseOp;
  if (Op == P::Const)
    return 0;
  if (Op == P::Where)
    return 3;
  if (Op == P::Dropout)
    return 1;
  bool Binary = (Op >= P::Add && Op <= P::Min) ||
                (Op >= P::GeluErfGrad && Op <= P::GeluTanhGrad) ||
                (Op >= P::Equal && Op <= P::GreaterOrEqual) ||
                (Op >= P::And && Op <= P::Xor) || Op == P::Mod;
  return Binary ? 2 : 1;
}

template <typename T> DSC_POINTWISE_HD T geluErf(T X) {
  return T(0.5) * X * (T(1) + std::erf(X * T(0.70710678118654752440)));
}
template <typename T> DSC_POINTWISE_HD T geluTanh(T X) {
  const T K = T(0.79788456080286535588); // sqrt(2 / pi)
  return T(0.5) * X * (T(1) + std::tanh(K * (X + T(0.044715) * X * X * X)));
}
template <typename T> DSC_POINTWISE_HD T geluErfGrad(T X) {
  T Cdf = T(0.5) * (T(1) + std::erf(X * T(0.70710678118654752440)));
  T Pdf = std::exp(T(-0.5) * X * X) * T(0.39894228040143267794); // 1/sqrt(2pi)
  return Cdf + X * Pdf;
}
template <typename T> DSC_POINTWISE_HD T geluTanhGrad(T X) {
  const T K = T(0.79788456080286535588);
  T U = std::tanh(K * (X + T(0.044715) * X * X * X));
  return T(0.5) * (T(1) + U) +
         T(0.5) * X * (T(1) - U * U) * K * (T(1) + T(3) * T(0.044715) * X * X);
}

/// One instruction on its arguments A[0..2].
template <typename T> DSC_POINTWISE_HD T apply(plan::PointwiseOp Op, const T *A) {
  using P = plan::PointwiseOp;
  switch (Op) {
  case P::Add:
    return A[0] + A[1];
  case P::Sub:
    return A[0] - A[1];
  case P::Mul:
    return A[0] * A[1];
  case P::Div:
    return A[0] / A[1];
  case P::Pow:
    return std::pow(A[0], A[1]);
  case P::Max:
    return A[0] > A[1] ? A[0] : A[1];
  case P::Min:
    return A[0] < A[1] ? A[0] : A[1];
  case P::Neg:
    return -A[0];
  case P::Abs:
    return std::fabs(A[0]);
  case P::Sign:
    return T((A[0] > T(0)) - (A[0] < T(0)));
  case P::Sqrt:
    return std::sqrt(A[0]);
  case P::Reciprocal:
    return T(1) / A[0];
  case P::Exp:
    return std::exp(A[0]);
  case P::Log:
    return std::log(A[0]);
  case P::Tanh:
    return std::tanh(A[0]);
  case P::Erf:
    return std::erf(A[0]);
  case P::Sigmoid:
    return T(1) / (T(1) + std::exp(-A[0]));
  case P::Relu:
    return A[0] > T(0) ? A[0] : T(0);
  case P::Cos:
    return std::cos(A[0]);
  case P::Sin:
    return std::sin(A[0]);
  case P::Floor:
    return std::floor(A[0]);
  case P::Ceil:
    return std::ceil(A[0]);
  case P::Trunc:
    return std::trunc(A[0]);
  case P::GeluErf:
    return geluErf(A[0]);
  case P::GeluTanh:
    return geluTanh(A[0]);
  case P::GeluErfGrad: // (x, dy)
    return A[1] * geluErfGrad(A[0]);
  case P::GeluTanhGrad:
    return A[1] * geluTanhGrad(A[0]);
  case P::Where:
    return A[0] != T(0) ? A[1] : A[2];
  case P::Equal:
    return T(A[0] == A[1]);
  case P::Less:
    return T(A[0] < A[1]);
  case P::LessOrEqual:
    return T(A[0] <= A[1]);
  case P::Greater:
    return T(A[0] > A[1]);
  case P::GreaterOrEqual:
    return T(A[0] >= A[1]);
  case P::Not:
    return T(A[0] == T(0));
  case P::And:
    return T(A[0] != T(0) && A[1] != T(0));
  case P::Or:
    return T(A[0] != T(0) || A[1] != T(0));
  case P::Xor:
    return T((A[0] != T(0)) != (A[1] != T(0)));
  case P::IsNaN:
    return T(A[0] != A[0]);
  case P::IsInf:
    return T(std::isinf(A[0]));
  case P::Mod: { // Python's sign convention (ONNX fmod=0).
    T M = std::fmod(A[0], A[1]);
    return M != T(0) && ((M < T(0)) != (A[1] < T(0))) ? M + A[1] : M;
  }
  case P::Const:
  case P::Dropout:
    break;
  }
  return T(0);
}

} // namespace dsc::pointwise

#undef DSC_POINTWISE_HD

#endif
