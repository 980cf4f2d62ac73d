//===- ReferenceKernels.h - Each kernel's math, once, on the host -*- C++ -*-===//
//
// The arithmetic of every kernel kind on contiguous fp32 arrays, in double
// where it accumulates. The compiler's operator registry evaluates its ops
// with these (constant folding, the reference interpreter); the reference
// executor runs a plan's kernels with them; dsrun's kernel tests compare
// the GPU against them. Dependency-free: built into dsc and dsrun alike.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_REFERENCEKERNELS_H
#define DSC_REFERENCEKERNELS_H

#include "dsc/PlanFormat.h"

#include <cstdint>

namespace dsc::reference {

/// One pointwise instruction on its arguments (A[0..2]); Const and
/// Dropout are the program runner's.
double pointwise(plan::PointwiseOp Op, const double *A);

/// Runs a pointwise program (checked by checkPlan) on one element: the
/// kernel's NumInputs input values fill the first registers, Outputs
/// receives one value per result. Element is the element's index in the
/// iteration, for dropout's stream.
void runProgram(const plan::PointwiseAttrs &P, unsigned NumInputs,
                const double *Inputs, double *Outputs, uint64_t Seed,
                uint64_t Element);

/// y = softmax(x) (or log-softmax) over each of Rows rows of Cols; with
/// ZeroMaskedRows, a row of all -inf gives zeros.
void softmax(const float *X, float *Y, int64_t Rows, int64_t Cols, bool Log,
             bool ZeroMaskedRows);
/// dx from y and dy: y (dy - sum(dy y)), or for log-softmax dy - e^y sum(dy).
void softmaxGrad(const float *Y, const float *Dy, float *Dx, int64_t Rows,
                 int64_t Cols, bool Log);

/// Layer normalization of each row; B may be null. Mean and Rstd per row.
void layerNorm(const float *X, const float *W, const float *B, float *Y,
               float *Mean, float *Rstd, int64_t Rows, int64_t Cols,
               double Eps);
/// dx, dw, db; Mean null for RMS normalization (then Db is unused).
void layerNormGrad(const float *Dy, const float *X, const float *W,
                   const float *Mean, const float *Rstd, float *Dx, float *Dw,
                   float *Db, int64_t Rows, int64_t Cols);
void rmsNorm(const float *X, const float *W, float *Y, float *Rstd,
             int64_t Rows, int64_t Cols, double Eps);
/// Rotary position embedding of each row of Cols (even) elements, the
/// tables Cos and Sin laid out as X. With h = Cols / 2:
///   y[i] = x[i] cos[i] - x[i+h] sin[i], y[i+h] = x[i+h] cos[i+h] + x[i] sin[i+h];
/// Backward, its transpose applied to X = dy:
///   dx[i] = dy[i] cos[i] + dy[i+h] sin[i+h], dx[i+h] = dy[i+h] cos[i+h] - dy[i] sin[i].
void rotary(const float *X, const float *Cos, const float *Sin, float *Y,
            int64_t Rows, int64_t Cols, bool Backward);
/// SwiGLU's gate: y = silu(g) u = g sigmoid(g) u, elementwise over N.
void swiglu(const float *G, const float *U, float *Y, int64_t N);
/// Its gradients: with s = sigmoid(g), dg = dy u s (1 + g (1 - s)) and
/// du = dy g s.
void swigluGrad(const float *Dy, const float *G, const float *U, float *Dg,
                float *Du, int64_t N);

/// Scaled dot-product attention. Q [B, Hq, T, D], K [B, Hkv, S, D],
/// V [B, Hkv, S, Dv], Bias broadcast to [B, Hq, T, S] through its strides
/// (null: none), all contiguous otherwise. Out [B, Hq, T, Dv], Lse
/// [B, Hq, T] (+inf for a row with every key masked; its output is 0).
struct AttentionShape {
  int64_t B, Hq, Hkv, T, S, D, Dv;
  bool Causal;
  double Scale;
  const float *Bias = nullptr;
  int64_t BiasStrides[4] = {0, 0, 0, 0};
};
void attention(const AttentionShape &A, const float *Q, const float *K,
               const float *V, float *Out, float *Lse);
/// dQ, dK, dV (zeroed here, summed over the query heads of a group).
void attentionGrad(const AttentionShape &A, const float *Dout, const float *Q,
                   const float *K, const float *V, const float *Out,
                   const float *Lse, float *Dq, float *Dk, float *Dv);

/// Mean cross entropy over Rows rows of V logits against Targets, leaving
/// out IgnoreIndex; Lse per row. The loss is 0 when every row is ignored.
/// Returns false when a target lies outside [0, V).
bool crossEntropy(const float *Logits, const int64_t *Targets, float *Loss,
                  float *Lse, int64_t Rows, int64_t V, int64_t IgnoreIndex);
void crossEntropyGrad(const float *Logits, const int64_t *Targets,
                      const float *Lse, double Dloss, float *Dlogits,
                      int64_t Rows, int64_t V, int64_t IgnoreIndex);

/// Out[o, j, i] = X[o, Index[j], i] for the Outer x Dim x Inner view of
/// X; false when an index is outside [-Dim, Dim).
bool gather(const float *X, const int64_t *Index, float *Out, int64_t Outer,
            int64_t Dim, int64_t Inner, int64_t Count);
/// The reverse, summed: Dx (zeroed here) gets Dout at each index.
bool gatherGrad(const int64_t *Index, const float *Dout, float *Dx,
                int64_t Outer, int64_t Dim, int64_t Inner, int64_t Count);

} // namespace dsc::reference

#endif
