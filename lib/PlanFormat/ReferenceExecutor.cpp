//===- ReferenceExecutor.cpp ----------------------------------------------===//

#include "dsc/ReferenceExecutor.h"
#include "dsc/Pointwise.h"
#include "dsc/ReferenceKernels.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace dsc::reference {

using plan::KernelKind;
using plan::TensorRef;

namespace {

int64_t elements(const TensorRef &R) {
  int64_t N = 1;
  for (int64_t D : R.Shape)
    N *= D;
  return N;
}

/// The storage offset of element Flat (row-major over R.Shape).
int64_t offsetOf(const TensorRef &R, int64_t Flat) {
  int64_t Off = int64_t(R.Offset);
  for (size_t K = R.Shape.size(); K-- > 0;) {
    int64_t D = R.Shape[K] ? R.Shape[K] : 1;
    Off += (Flat % D) * R.Strides[K];
    Flat /= D;
  }
  return Off;
}

/// The operand's elements in row-major order.
std::vector<float> load(const Span &S, const TensorRef &R) {
  std::vector<float> Out(size_t(elements(R)));
  for (int64_t I = 0; I < int64_t(Out.size()); ++I)
    Out[size_t(I)] = S[size_t(offsetOf(R, I))];
  return Out;
}

std::vector<int64_t> loadInts(const Span &S, const TensorRef &R) {
  std::vector<float> F = load(S, R);
  return std::vector<int64_t>(F.begin(), F.end());
}

void store(Span &S, const TensorRef &R,
           const std::vector<float> &V) {
  for (int64_t I = 0; I < int64_t(V.size()); ++I)
    S[size_t(offsetOf(R, I))] = V[size_t(I)];
}

/// What storing V into a value of type T does to it.
float convert(double V, plan::DType T) {
  switch (T) {
  case plan::DType::I32:
  case plan::DType::I64:
    return float(int64_t(V));
  case plan::DType::U8:
    return V != 0 ? 1.0f : 0.0f;
  default:
    return float(V);
  }
}

} // namespace

void Span::assign(const std::vector<float> &V) {
  std::memcpy(Data, V.data(), std::min(V.size(), Size) * sizeof(float));
}

Executor::Executor(const std::vector<plan::Value> &Values,
                   const std::vector<plan::Constant> &Constants)
    : Executor(Values, Constants,
               std::vector<uint64_t>(Values.size(), NoPlace), 0) {}

Executor::Executor(const std::vector<plan::Value> &Values,
                   const std::vector<plan::Constant> &Constants,
                   const std::vector<uint64_t> &Place, uint64_t ArenaFloats)
    : Values(Values), Own(Values.size()),
      Arena(size_t(ArenaFloats), std::numeric_limits<float>::quiet_NaN()),
      Storage(Values.size()) {
  for (size_t I = 0; I < Values.size(); ++I) {
    size_t N = size_t(Values[I].Elems);
    if (I < Place.size() && Place[I] != NoPlace) {
      if (Place[I] > Arena.size() || N > Arena.size() - Place[I]) {
        std::fprintf(stderr, "reference executor: value %zu lies outside "
                             "the arena\n", I);
        std::abort();
      }
      Storage[I] = Span(Arena.data() + Place[I], N);
    } else {
      Own[I].assign(N, 0.0f);
      Storage[I] = Span(Own[I].data(), N);
    }
  }
  fillConstants(Constants);
}

void Executor::fillConstants(const std::vector<plan::Constant> &Constants) {
  for (const plan::Constant &C : Constants) {
    const plan::Value &V = Values[C.Value];
    Span &S = Storage[C.Value];
    for (size_t K = 0; K < S.size(); ++K) {
      const uint8_t *P = C.Bytes.data() + K * plan::dtypeBytes(V.Type);
      if (V.Type == plan::DType::F32) {
        std::memcpy(&S[K], P, 4);
      } else if (V.Type == plan::DType::I32) {
        int32_t X;
        std::memcpy(&X, P, 4);
        S[K] = float(X);
      } else {
        S[K] = float(*P);
      }
    }
  }
}

std::string Executor::run(const plan::Kernel &K, uint64_t Seed) {
  auto In = [&](size_t I) -> Span & {
    return Storage[K.Inputs[I].Value];
  };
  auto Out = [&](size_t I) -> Span & {
    return Storage[K.Outputs[I].Value];
  };
  const std::vector<int64_t> &I = K.Ints;
  switch (K.Kind) {
  case KernelKind::Gemm: {
    int64_t M = I[0], N = I[1], Kd = I[2], Batch = I[3];
    bool TA = I[4], TB = I[5];
    int64_t LdA = I[6], LdB = I[7], LdC = I[8], SA = I[9], SB = I[10],
            SC = I[11];
    const float *A = In(0).data() + K.Inputs[0].Offset;
    const float *B = In(1).data() + K.Inputs[1].Offset;
    float *C = Out(0).data() + K.Outputs[0].Offset;
    auto Epilogue = plan::GemmEpilogue(I[12]);
    bool Gelu = Epilogue == plan::GemmEpilogue::BiasGeluTanh,
         DGelu = Epilogue == plan::GemmEpilogue::DGeluTanh;
    const float *Bias = K.Inputs.size() > 2 && !DGelu
                            ? In(2).data() + K.Inputs[2].Offset
                            : nullptr;
    // GELU's pre-activation, laid out as C: written by the forward's
    // epilogue, read by the backward's.
    float *Aux = Gelu    ? Out(1).data() + K.Outputs[1].Offset
                 : DGelu ? In(2).data() + K.Inputs[2].Offset
                         : nullptr;
    double Alpha = K.Floats[0], Beta = K.Floats[1];
    for (int64_t Bt = 0; Bt < Batch; ++Bt)
      for (int64_t R = 0; R < M; ++R)
        for (int64_t Col = 0; Col < N; ++Col) {
          double Sum = 0;
          for (int64_t L = 0; L < Kd; ++L)
            Sum += double(TA ? A[Bt * SA + L * LdA + R] : A[Bt * SA + R * LdA + L]) *
                   double(TB ? B[Bt * SB + Col * LdB + L] : B[Bt * SB + L * LdB + Col]);
          float &Dst = C[Bt * SC + R * LdC + Col];
          double V = Alpha * Sum + (Beta != 0 ? Beta * Dst : 0.0) +
                     (Bias ? Bias[Col] : 0.0f);
          if (Gelu) {
            Aux[Bt * SC + R * LdC + Col] =
                convert(V, Values[K.Outputs[1].Value].Type);
            V = pointwise::geluTanh(V);
          } else if (DGelu) {
            V *= pointwise::geluTanhGrad(double(Aux[Bt * SC + R * LdC + Col]));
          }
          Dst = float(V);
        }
    // A bias gradient: op(A) summed over K for each of its M rows, or
    // op(B) for each of its N columns.
    if (Epilogue == plan::GemmEpilogue::BiasGradA ||
        Epilogue == plan::GemmEpilogue::BiasGradB) {
      bool OfA = Epilogue == plan::GemmEpilogue::BiasGradA;
      float *G = Out(1).data() + K.Outputs[1].Offset;
      for (int64_t J = 0; J < (OfA ? M : N); ++J) {
        double Sum = 0;
        for (int64_t L = 0; L < Kd; ++L)
          Sum += OfA ? double(TA ? A[L * LdA + J] : A[J * LdA + L])
                     : double(TB ? B[J * LdB + L] : B[L * LdB + J]);
        G[J] = convert(Sum, Values[K.Outputs[1].Value].Type);
      }
    }
    return "";
  }
  case KernelKind::Pointwise: {
    const TensorRef &O = K.Outputs[0];
    int64_t N = elements(O);
    std::vector<double> Args(K.Inputs.size()), Res(K.Outputs.size());
    for (int64_t E = 0; E < N; ++E) {
      for (size_t J = 0; J < K.Inputs.size(); ++J)
        Args[J] = In(J)[size_t(offsetOf(K.Inputs[J], E))];
      runProgram(I.data(), unsigned(K.Inputs.size()), K.Floats.data(),
                 Args.data(), Res.data(), Seed, uint64_t(E));
      for (size_t J = 0; J < K.Outputs.size(); ++J)
        Out(J)[size_t(offsetOf(K.Outputs[J], E))] =
            convert(Res[J], Values[K.Outputs[J].Value].Type);
    }
    return "";
  }
  case KernelKind::Fill: {
    const TensorRef &O = K.Outputs[0];
    for (int64_t E = 0; E < elements(O); ++E)
      Out(0)[size_t(offsetOf(O, E))] = float(K.Floats[0]);
    return "";
  }
  case KernelKind::Reduce: {
    const TensorRef &X = K.Inputs[0], &Y = K.Outputs[0];
    std::vector<double> Acc(size_t(elements(Y)), 0.0);
    int64_t Mask = I[0];
    for (int64_t E = 0; E < elements(X); ++E) {
      int64_t Rest = E, Dst = 0, Stride = 1;
      for (size_t D = X.Shape.size(); D-- > 0;) {
        int64_t Ix = Rest % X.Shape[D];
        Rest /= X.Shape[D];
        if (!(Mask >> D & 1))
          Dst += Ix * Stride;
        Stride *= (Mask >> D & 1) ? 1 : X.Shape[D];
      }
      Acc[size_t(Dst)] += In(0)[size_t(offsetOf(X, E))];
    }
    std::vector<float> R(Acc.size());
    for (size_t J = 0; J < Acc.size(); ++J)
      R[J] = float(Acc[J] * K.Floats[0]);
    store(Out(0), Y, R);
    return "";
  }
  case KernelKind::Softmax: {
    std::vector<float> X = load(In(0), K.Inputs[0]), Y(X.size());
    softmax(X.data(), Y.data(), I[0], I[1], I[3], I[2]);
    store(Out(0), K.Outputs[0], Y);
    return "";
  }
  case KernelKind::SoftmaxGrad: {
    std::vector<float> Y = load(In(0), K.Inputs[0]),
                       G = load(In(1), K.Inputs[1]), D(Y.size());
    softmaxGrad(Y.data(), G.data(), D.data(), I[0], I[1], I[2]);
    store(Out(0), K.Outputs[0], D);
    return "";
  }
  case KernelKind::Rotary:
  case KernelKind::RotaryGrad: {
    std::vector<float> X = load(In(0), K.Inputs[0]),
                       C = load(In(1), K.Inputs[1]),
                       S = load(In(2), K.Inputs[2]), Y(X.size());
    rotary(X.data(), C.data(), S.data(), Y.data(), I[0], I[1],
           K.Kind == KernelKind::RotaryGrad);
    store(Out(0), K.Outputs[0], Y);
    return "";
  }
  case KernelKind::SwiGLU: {
    std::vector<float> G = load(In(0), K.Inputs[0]),
                       U = load(In(1), K.Inputs[1]), Y(G.size());
    swiglu(G.data(), U.data(), Y.data(), int64_t(G.size()));
    store(Out(0), K.Outputs[0], Y);
    return "";
  }
  case KernelKind::SwiGLUGrad: {
    std::vector<float> Dy = load(In(0), K.Inputs[0]),
                       G = load(In(1), K.Inputs[1]),
                       U = load(In(2), K.Inputs[2]), Dg(G.size()),
                       Du(G.size());
    swigluGrad(Dy.data(), G.data(), U.data(), Dg.data(), Du.data(),
               int64_t(G.size()));
    store(Out(0), K.Outputs[0], Dg);
    store(Out(1), K.Outputs[1], Du);
    return "";
  }
  case KernelKind::LayerNorm:
  case KernelKind::RMSNorm: {
    bool Rms = K.Kind == KernelKind::RMSNorm;
    // With the residual add: x = in0 + in1, rounded as stored, and kept.
    size_t R = I.size() > 2 && I[2] == 1 ? 1 : 0;
    std::vector<float> X = load(In(0), K.Inputs[0]),
                       W = load(In(1 + R), K.Inputs[1 + R]), B, Y(X.size()),
                       Mean(static_cast<size_t>(I[0])),
                       Rstd(static_cast<size_t>(I[0]));
    if (R) {
      std::vector<float> X2 = load(In(1), K.Inputs[1]);
      plan::DType T = Values[K.Outputs.back().Value].Type;
      for (size_t J = 0; J < X.size(); ++J)
        X[J] = convert(double(X[J]) + double(X2[J]), T);
      store(Out(K.Outputs.size() - 1), K.Outputs.back(), X);
    }
    if (!Rms && K.Inputs.size() > 2 + R)
      B = load(In(2 + R), K.Inputs[2 + R]);
    if (Rms) {
      rmsNorm(X.data(), W.data(), Y.data(), Rstd.data(), I[0], I[1],
              K.Floats[0]);
      store(Out(0), K.Outputs[0], Y);
      store(Out(1), K.Outputs[1], Rstd);
      return "";
    }
    layerNorm(X.data(), W.data(), B.empty() ? nullptr : B.data(), Y.data(),
              Mean.data(), Rstd.data(), I[0], I[1], K.Floats[0]);
    store(Out(0), K.Outputs[0], Y);
    store(Out(1), K.Outputs[1], Mean);
    store(Out(2), K.Outputs[2], Rstd);
    return "";
  }
  case KernelKind::LayerNormGrad:
  case KernelKind::RMSNormGrad: {
    bool Rms = K.Kind == KernelKind::RMSNormGrad;
    std::vector<float> Dy = load(In(0), K.Inputs[0]),
                       X = load(In(1), K.Inputs[1]),
                       W = load(In(2), K.Inputs[2]),
                       S3 = load(In(3), K.Inputs[3]);
    std::vector<float> S4 = Rms ? S3 : load(In(4), K.Inputs[4]);
    std::vector<float> Dx(X.size()), Dw(W.size()), Db(W.size());
    layerNormGrad(Dy.data(), X.data(), W.data(), Rms ? nullptr : S3.data(),
                  S4.data(), Dx.data(), Dw.data(), Db.data(), I[0], I[1]);
    if (I.size() > 2 && I[2] == 1) {
      // The stream's gradient added to dx, each rounded as stored.
      std::vector<float> G = load(In(K.Inputs.size() - 1), K.Inputs.back());
      plan::DType T = Values[K.Outputs[0].Value].Type;
      for (size_t J = 0; J < Dx.size(); ++J)
        Dx[J] = convert(double(convert(Dx[J], T)) + double(G[J]), T);
    }
    store(Out(0), K.Outputs[0], Dx);
    store(Out(1), K.Outputs[1], Dw);
    if (!Rms)
      store(Out(2), K.Outputs[2], Db);
    return "";
  }
  case KernelKind::Attention:
  case KernelKind::AttentionGrad: {
    bool Grad = K.Kind == KernelKind::AttentionGrad;
    size_t Q = Grad ? 1 : 0;
    AttentionShape S;
    S.B = I[0], S.Hq = I[1], S.Hkv = I[2], S.T = I[3], S.S = I[4];
    S.D = I[5], S.Dv = I[6], S.Causal = I[7], S.Scale = K.Floats[0];
    std::vector<float> Qv = load(In(Q), K.Inputs[Q]),
                       Kv = load(In(Q + 1), K.Inputs[Q + 1]),
                       Vv = load(In(Q + 2), K.Inputs[Q + 2]), Bias;
    size_t BiasAt = Grad ? 6 : 3;
    if (K.Inputs.size() > BiasAt) {
      Bias = load(In(BiasAt), K.Inputs[BiasAt]); // Expanded to [B,H,T,S].
      S.Bias = Bias.data();
      S.BiasStrides[0] = S.Hq * S.T * S.S;
      S.BiasStrides[1] = S.T * S.S;
      S.BiasStrides[2] = S.S;
      S.BiasStrides[3] = 1;
    }
    if (!Grad) {
      std::vector<float> O(size_t(S.B * S.Hq * S.T * S.Dv)),
          L(size_t(S.B * S.Hq * S.T));
      attention(S, Qv.data(), Kv.data(), Vv.data(), O.data(), L.data());
      store(Out(0), K.Outputs[0], O);
      store(Out(1), K.Outputs[1], L);
      return "";
    }
    std::vector<float> Do = load(In(0), K.Inputs[0]),
                       O = load(In(4), K.Inputs[4]), L = load(In(5), K.Inputs[5]);
    std::vector<float> Dq(Qv.size()), Dk(Kv.size()), Dv(Vv.size());
    attentionGrad(S, Do.data(), Qv.data(), Kv.data(), Vv.data(), O.data(),
                  L.data(), Dq.data(), Dk.data(), Dv.data());
    store(Out(0), K.Outputs[0], Dq);
    store(Out(1), K.Outputs[1], Dk);
    store(Out(2), K.Outputs[2], Dv);
    return "";
  }
  case KernelKind::Gather: {
    std::vector<float> X = load(In(0), K.Inputs[0]),
                       Y(size_t(elements(K.Outputs[0])));
    std::vector<int64_t> Idx = loadInts(In(1), K.Inputs[1]);
    if (!gather(X.data(), Idx.data(), Y.data(), I[1], I[2], I[3], I[4]))
      return "an index is outside the gathered dimension";
    store(Out(0), K.Outputs[0], Y);
    return "";
  }
  case KernelKind::GatherGrad: {
    std::vector<int64_t> Idx = loadInts(In(0), K.Inputs[0]);
    std::vector<float> Dy = load(In(1), K.Inputs[1]),
                       Dx(size_t(elements(K.Outputs[0])));
    if (!gatherGrad(Idx.data(), Dy.data(), Dx.data(), I[1], I[2], I[3], I[4]))
      return "an index is outside the gathered dimension";
    store(Out(0), K.Outputs[0], Dx);
    return "";
  }
  case KernelKind::CrossEntropy: {
    std::vector<float> X = load(In(0), K.Inputs[0]),
                       L(static_cast<size_t>(I[0]));
    std::vector<int64_t> T = loadInts(In(1), K.Inputs[1]);
    float Loss = 0;
    if (!crossEntropy(X.data(), T.data(), &Loss, L.data(), I[0], I[1], I[2]))
      return "a target is outside the " + std::to_string(I[1]) + " classes";
    store(Out(0), K.Outputs[0], {Loss});
    store(Out(1), K.Outputs[1], L);
    return "";
  }
  case KernelKind::CrossEntropyGrad: {
    std::vector<float> X = load(In(0), K.Inputs[0]), L = load(In(2), K.Inputs[2]),
                       D(X.size());
    std::vector<int64_t> T = loadInts(In(1), K.Inputs[1]);
    double Dl = In(3)[size_t(K.Inputs[3].Offset)];
    crossEntropyGrad(X.data(), T.data(), L.data(), Dl, D.data(), I[0], I[1],
                     I[2]);
    store(Out(0), K.Outputs[0], D);
    return "";
  }
  }
  return "a kernel of unknown kind";
}

} // namespace dsc::reference
