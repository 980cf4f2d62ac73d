//===- ReferenceKernels.cpp - Each kernel's math, once --------------------===//

#include "dsc/ReferenceKernels.h"
#include "dsc/Pointwise.h"
#include "dsc/Random.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dsc::reference {

using plan::PointwiseOp;

double pointwise(PointwiseOp Op, const double *A) {
  return dsc::pointwise::apply(Op, A);
}

void runProgram(const plan::PointwiseAttrs &P, unsigned NumInputs,
                const double *Inputs, double *Outputs, uint64_t Seed,
                uint64_t Element) {
  double R[256];
  uint32_t Regs = std::min<uint32_t>(P.Registers, 256);
  for (uint32_t K = 0; K < Regs; ++K)
    R[K] = K < NumInputs ? Inputs[K] : 0.0;
  for (const plan::PointwiseInstr &X : P.Program) {
    double V;
    if (X.Op == PointwiseOp::Const) {
      V = P.Constants[X.A];
    } else if (X.Op == PointwiseOp::Dropout) {
      float Ratio = float(P.Constants[X.B]);
      V = dropoutKeeps(Seed, X.C, Element, Ratio)
              ? R[X.A] / (1 - double(Ratio))
              : 0.0;
    } else {
      double A[3] = {R[X.A], R[X.B], R[X.C]};
      V = pointwise(X.Op, A);
    }
    R[X.Dest] = V;
  }
  for (size_t O = 0; O < P.Results.size(); ++O)
    Outputs[O] = R[P.Results[O]];
}

void softmax(const float *X, float *Y, int64_t Rows, int64_t Cols, bool Log,
             bool ZeroMaskedRows) {
  for (int64_t R = 0; R < Rows; ++R) {
    const float *In = X + R * Cols;
    float *Out = Y + R * Cols;
    double Max = -INFINITY;
    for (int64_t K = 0; K < Cols; ++K)
      Max = std::max(Max, double(In[K]));
    if (ZeroMaskedRows && Max == -INFINITY) {
      std::fill(Out, Out + Cols, 0.0f);
      continue;
    }
    double Sum = 0;
    for (int64_t K = 0; K < Cols; ++K)
      Sum += std::exp(double(In[K]) - Max);
    for (int64_t K = 0; K < Cols; ++K) {
      double Z = double(In[K]) - Max;
      Out[K] = float(Log ? Z - std::log(Sum) : std::exp(Z) / Sum);
    }
  }
}

void softmaxGrad(const float *Y, const float *Dy, float *Dx, int64_t Rows,
                 int64_t Cols, bool Log) {
  for (int64_t R = 0; R < Rows; ++R) {
    const float *PY = Y + R * Cols, *PG = Dy + R * Cols;
    double Dot = 0;
    for (int64_t K = 0; K < Cols; ++K)
      Dot += Log ? double(PG[K]) : double(PG[K]) * PY[K];
    for (int64_t K = 0; K < Cols; ++K)
      Dx[R * Cols + K] = float(Log ? PG[K] - std::exp(double(PY[K])) * Dot
                                   : PY[K] * (PG[K] - Dot));
  }
}

void layerNorm(const float *X, const float *W, const float *B, float *Y,
               float *Mean, float *Rstd, int64_t Rows, int64_t Cols,
               double Eps) {
  for (int64_t R = 0; R < Rows; ++R) {
    const float *Row = X + R * Cols;
    double Mu = 0, Var = 0;
    for (int64_t K = 0; K < Cols; ++K)
      Mu += Row[K];
    Mu /= double(Cols);
    for (int64_t K = 0; K < Cols; ++K)
      Var += (Row[K] - Mu) * (Row[K] - Mu);
    double S = 1 / std::sqrt(Var / double(Cols) + Eps);
    for (int64_t K = 0; K < Cols; ++K)
      Y[R * Cols + K] = float((Row[K] - Mu) * S * W[K] + (B ? B[K] : 0.0f));
    Mean[R] = float(Mu);
    Rstd[R] = float(S);
  }
}

void rmsNorm(const float *X, const float *W, float *Y, float *Rstd,
             int64_t Rows, int64_t Cols, double Eps) {
  for (int64_t R = 0; R < Rows; ++R) {
    const float *Row = X + R * Cols;
    double Ms = 0;
    for (int64_t K = 0; K < Cols; ++K)
      Ms += double(Row[K]) * Row[K];
    double S = 1 / std::sqrt(Ms / double(Cols) + Eps);
    for (int64_t K = 0; K < Cols; ++K)
      Y[R * Cols + K] = float(Row[K] * S * W[K]);
    Rstd[R] = float(S);
  }
}

void rotary(const float *X, const float *Cos, const float *Sin, float *Y,
            int64_t Rows, int64_t Cols, bool Backward) {
  int64_t H = Cols / 2;
  for (int64_t R = 0; R < Rows; ++R)
    for (int64_t I = 0; I < H; ++I) {
      int64_t A = R * Cols + I, B = A + H;
      double Xa = X[A], Xb = X[B];
      if (Backward) {
        Y[A] = float(Xa * Cos[A] + Xb * Sin[B]);
        Y[B] = float(Xb * Cos[B] - Xa * Sin[A]);
      } else {
        Y[A] = float(Xa * Cos[A] - Xb * Sin[A]);
        Y[B] = float(Xb * Cos[B] + Xa * Sin[B]);
      }
    }
}

void swiglu(const float *G, const float *U, float *Y, int64_t N) {
  for (int64_t I = 0; I < N; ++I) {
    double S = 1 / (1 + std::exp(-double(G[I])));
    Y[I] = float(G[I] * S * U[I]);
  }
}

void swigluGrad(const float *Dy, const float *G, const float *U, float *Dg,
                float *Du, int64_t N) {
  for (int64_t I = 0; I < N; ++I) {
    double S = 1 / (1 + std::exp(-double(G[I])));
    Dg[I] = float(double(Dy[I]) * U[I] * S * (1 + G[I] * (1 - S)));
    Du[I] = float(double(Dy[I]) * G[I] * S);
  }
}

void layerNormGrad(const float *Dy, const float *X, const float *W,
                   const float *Mean, const float *Rstd, float *Dx, float *Dw,
                   float *Db, int64_t Rows, int64_t Cols) {
  std::vector<double> SumW(size_t(Cols), 0), SumB(size_t(Cols), 0);
  for (int64_t R = 0; R < Rows; ++R) {
    const float *PX = X + R * Cols, *PG = Dy + R * Cols;
    double M = Mean ? Mean[R] : 0.0, S = Rstd[R];
    double MeanG = 0, MeanGX = 0;
    for (int64_t K = 0; K < Cols; ++K) {
      double Xh = (PX[K] - M) * S, G = double(PG[K]) * W[K];
      MeanG += G;
      MeanGX += G * Xh;
      SumW[size_t(K)] += double(PG[K]) * Xh;
      SumB[size_t(K)] += PG[K];
    }
    MeanG /= double(Cols);
    MeanGX /= double(Cols);
    for (int64_t K = 0; K < Cols; ++K) {
      double Xh = (PX[K] - M) * S, G = double(PG[K]) * W[K];
      Dx[R * Cols + K] =
          float(Mean ? S * (G - MeanG - Xh * MeanGX) : S * (G - Xh * MeanGX));
    }
  }
  for (int64_t K = 0; K < Cols; ++K) {
    Dw[K] = float(SumW[size_t(K)]);
    if (Mean && Db)
      Db[K] = float(SumB[size_t(K)]);
  }
}

namespace {

/// Scaled, masked scores of one (batch, head): -inf where masked.
void scores(const AttentionShape &A, const float *Q, const float *K,
            int64_t Bi, int64_t H, std::vector<double> &P) {
  P.assign(size_t(A.T * A.S), 0);
  const float *PQ = Q + ((Bi * A.Hq + H) * A.T) * A.D;
  const float *PK = K + ((Bi * A.Hkv + H / (A.Hq / A.Hkv)) * A.S) * A.D;
  for (int64_t I = 0; I < A.T; ++I)
    for (int64_t J = 0; J < A.S; ++J) {
      if (A.Causal && J > I) {
        P[size_t(I * A.S + J)] = -INFINITY;
        continue;
      }
      double Dot = 0;
      for (int64_t L = 0; L < A.D; ++L)
        Dot += double(PQ[I * A.D + L]) * PK[J * A.D + L];
      double X = Dot * A.Scale;
      if (A.Bias)
        X += A.Bias[Bi * A.BiasStrides[0] + H * A.BiasStrides[1] +
                    I * A.BiasStrides[2] + J * A.BiasStrides[3]];
      P[size_t(I * A.S + J)] = X;
    }
}

} // namespace

void attention(const AttentionShape &A, const float *Q, const float *K,
               const float *V, float *Out, float *Lse) {
  std::vector<double> P;
  for (int64_t Bi = 0; Bi < A.B; ++Bi)
    for (int64_t H = 0; H < A.Hq; ++H) {
      scores(A, Q, K, Bi, H, P);
      const float *PV = V + ((Bi * A.Hkv + H / (A.Hq / A.Hkv)) * A.S) * A.Dv;
      for (int64_t I = 0; I < A.T; ++I) {
        double Max = -INFINITY, Sum = 0;
        for (int64_t J = 0; J < A.S; ++J)
          Max = std::max(Max, P[size_t(I * A.S + J)]);
        for (int64_t J = 0; J < A.S && Max != -INFINITY; ++J)
          Sum += std::exp(P[size_t(I * A.S + J)] - Max);
        int64_t Row = (Bi * A.Hq + H) * A.T + I;
        Lse[Row] = float(Sum > 0 ? Max + std::log(Sum) : INFINITY);
        for (int64_t L = 0; L < A.Dv; ++L) {
          double Acc = 0;
          for (int64_t J = 0; J < A.S && Sum > 0; ++J)
            Acc += std::exp(P[size_t(I * A.S + J)] - Max) / Sum *
                   PV[J * A.Dv + L];
          Out[Row * A.Dv + L] = float(Acc);
        }
      }
    }
}

void attentionGrad(const AttentionShape &A, const float *Dout, const float *Q,
                   const float *K, const float *V, const float *Out,
                   const float *Lse, float *Dq, float *Dk, float *Dv) {
  std::fill(Dq, Dq + A.B * A.Hq * A.T * A.D, 0.0f);
  std::fill(Dk, Dk + A.B * A.Hkv * A.S * A.D, 0.0f);
  std::fill(Dv, Dv + A.B * A.Hkv * A.S * A.Dv, 0.0f);
  std::vector<double> P, Ds(size_t(A.T * A.S));
  int64_t Group = A.Hq / A.Hkv;
  for (int64_t Bi = 0; Bi < A.B; ++Bi)
    for (int64_t H = 0; H < A.Hq; ++H) {
      scores(A, Q, K, Bi, H, P);
      int64_t Rows = (Bi * A.Hq + H) * A.T;
      int64_t Kv = (Bi * A.Hkv + H / Group) * A.S;
      const float *PQ = Q + Rows * A.D, *PK = K + Kv * A.D, *PV = V + Kv * A.Dv;
      const float *PdO = Dout + Rows * A.Dv, *PO = Out + Rows * A.Dv;
      float *PdQ = Dq + Rows * A.D, *PdK = Dk + Kv * A.D, *PdV = Dv + Kv * A.Dv;
      for (int64_t I = 0; I < A.T; ++I) {
        double L = Lse[Rows + I], Delta = 0;
        for (int64_t X = 0; X < A.Dv; ++X)
          Delta += double(PdO[I * A.Dv + X]) * PO[I * A.Dv + X];
        for (int64_t J = 0; J < A.S; ++J) {
          double Pij =
              std::isinf(L) ? 0 : std::exp(P[size_t(I * A.S + J)] - L);
          double Dp = 0;
          for (int64_t X = 0; X < A.Dv; ++X) {
            Dp += double(PdO[I * A.Dv + X]) * PV[J * A.Dv + X];
            PdV[J * A.Dv + X] += float(Pij * PdO[I * A.Dv + X]);
          }
          Ds[size_t(I * A.S + J)] = Pij * (Dp - Delta) * A.Scale;
        }
      }
      for (int64_t I = 0; I < A.T; ++I)
        for (int64_t J = 0; J < A.S; ++J) {
          double G = Ds[size_t(I * A.S + J)];
          if (G == 0)
            continue;
          for (int64_t X = 0; X < A.D; ++X) {
            PdQ[I * A.D + X] += float(G * PK[J * A.D + X]);
            PdK[J * A.D + X] += float(G * PQ[I * A.D + X]);
          }
        }
    }
}

bool crossEntropy(const float *Logits, const int64_t *Targets, float *Loss,
                  float *Lse, int64_t Rows, int64_t V, int64_t IgnoreIndex) {
  double Sum = 0;
  int64_t Count = 0;
  for (int64_t R = 0; R < Rows; ++R) {
    const float *Row = Logits + R * V;
    double Max = -INFINITY, S = 0;
    for (int64_t K = 0; K < V; ++K)
      Max = std::max(Max, double(Row[K]));
    for (int64_t K = 0; K < V; ++K)
      S += std::exp(Row[K] - Max);
    double L = Max + std::log(S);
    Lse[R] = float(L);
    int64_t T = Targets[R];
    if (T == IgnoreIndex)
      continue;
    if (T < 0 || T >= V)
      return false;
    Sum += L - Row[T];
    ++Count;
  }
  *Loss = float(Count ? Sum / double(Count) : 0.0);
  return true;
}

void crossEntropyGrad(const float *Logits, const int64_t *Targets,
                      const float *Lse, double Dloss, float *Dlogits,
                      int64_t Rows, int64_t V, int64_t IgnoreIndex) {
  int64_t Count = 0;
  for (int64_t R = 0; R < Rows; ++R)
    Count += Targets[R] != IgnoreIndex;
  for (int64_t R = 0; R < Rows; ++R) {
    float *Out = Dlogits + R * V;
    if (Targets[R] == IgnoreIndex || !Count) {
      std::fill(Out, Out + V, 0.0f);
      continue;
    }
    const float *Row = Logits + R * V;
    for (int64_t K = 0; K < V; ++K)
      Out[K] = float((std::exp(Row[K] - Lse[R]) - (K == Targets[R])) * Dloss /
                     double(Count));
  }
}

bool gather(const float *X, const int64_t *Index, float *Out, int64_t Outer,
            int64_t Dim, int64_t Inner, int64_t Count) {
  for (int64_t J = 0; J < Count; ++J)
    if (Index[J] < -Dim || Index[J] >= Dim)
      return false;
  for (int64_t O = 0; O < Outer; ++O)
    for (int64_t J = 0; J < Count; ++J) {
      int64_t K = Index[J] < 0 ? Index[J] + Dim : Index[J];
      for (int64_t I = 0; I < Inner; ++I)
        Out[(O * Count + J) * Inner + I] = X[(O * Dim + K) * Inner + I];
    }
  return true;
}

bool gatherGrad(const int64_t *Index, const float *Dout, float *Dx,
                int64_t Outer, int64_t Dim, int64_t Inner, int64_t Count) {
  std::fill(Dx, Dx + Outer * Dim * Inner, 0.0f);
  std::vector<double> Acc(size_t(Outer * Dim * Inner), 0);
  for (int64_t J = 0; J < Count; ++J)
    if (Index[J] < -Dim || Index[J] >= Dim)
      return false;
  for (int64_t O = 0; O < Outer; ++O)
    for (int64_t J = 0; J < Count; ++J) {
      int64_t K = Index[J] < 0 ? Index[J] + Dim : Index[J];
      for (int64_t I = 0; I < Inner; ++I)
        Acc[size_t((O * Dim + K) * Inner + I)] +=
            Dout[(O * Count + J) * Inner + I];
    }
  for (size_t K = 0; K < Acc.size(); ++K)
    Dx[K] = float(Acc[K]);
  return true;
}

} // namespace dsc::reference
