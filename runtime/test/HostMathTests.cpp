//===- HostMathTests.cpp - HostMath tests -----------------------------------===//
//
// The host-side arithmetic: 16-bit conversions, division by multiply and
// shift, the host AdamW and its typed loops, the thread pool, fp16 loss
// scaling.
//
//===----------------------------------------------------------------------===//

#include "HostTests.h"

#include "Calibration.h"
#include "Checkpoint.h"
#include "Collectives.h"
#include "Exposed.h"
#include "FastDivmod.h"
#include "HostMath.h"
#include "Launch.h"
#include "Arena.h"
#include "LossScaler.h"
#include "Quantize.h"
#include "dsc/KernelTime.h"
#include "dsc/PlanCheck.h"
#include "dsc/PlanCodec.h"
#include "Nvme.h"
#include "TokenData.h"
#include "Trace.h"
#include "Weights.h"
#include "dsc/PlanFacts.h"
#include "dsc/SafeTensors.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace dsrun;
namespace plan = dsc::plan;

TEST(HostMath, Conversions) {
  EXPECT(toBF16(1.0f) == 0x3f80);
  EXPECT(toBF16(1.00390625f) == 0x3f80); // Halfway: to even.
  EXPECT(toBF16(1.01171875f) == 0x3f82); // Halfway above an odd: up.
  EXPECT(toBF16(bitsFloat(0x7f800001u)) == 0x7fc0); // A NaN, quieted.
  EXPECT(toBF16(bitsFloat(0xff812345u)) == 0xffc1);
  EXPECT(toBF16(bitsFloat(0x7f800000u)) == 0x7f80); // Infinity stays.
  EXPECT(toBF16(bitsFloat(0x7f7fffffu)) == 0x7f80); // Rounds up to it.
  EXPECT(toFP16(1.0f) == 0x3c00);
  EXPECT(toFP16(65504.0f) == 0x7bff);
  EXPECT(toFP16(65520.0f) == 0x7c00);
  EXPECT(toFP16(-2.0f) == 0xc000);
  EXPECT(toFP16(std::ldexp(1.0f, -24)) == 0x0001);
  EXPECT(toFP16(std::ldexp(1.0f, -25)) == 0x0000); // Halfway: to even 0.
  EXPECT(toFP16(std::ldexp(3.0f, -25)) == 0x0002); // 1.5 ulp: to even 2.
  EXPECT(toFP16(std::nanf("")) == 0x7e00);
  for (uint32_t H = 0; H < 0x10000; ++H) {
    uint16_t X = uint16_t(H);
    bool HalfNaN = (X & 0x7c00) == 0x7c00 && (X & 0x3ff);
    if (!HalfNaN && toFP16(fromFP16(X)) != X) {
      fprintf(stderr, "fp16 0x%04x does not round-trip\n", H);
      ADD_FAILURE();
      break;
    }
    bool BrainNaN = (X & 0x7f80) == 0x7f80 && (X & 0x7f);
    if (!BrainNaN && toBF16(fromBF16(X)) != X) {
      fprintf(stderr, "bf16 0x%04x does not round-trip\n", H);
      ADD_FAILURE();
      break;
    }
  }
  // Synthetic gradients are k/16, |k| <= 4: exact in every dtype.
  for (uint64_t E = 0; E < 1000; ++E) {
    float G = syntheticGrad(1, 2, 0, 3, E);
    EXPECT(G * 16 == std::round(G * 16) && std::fabs(G) <= 0.25f);
    EXPECT(fromBF16(toBF16(G)) == G && fromFP16(toFP16(G)) == G);
    EXPECT(G == syntheticGrad(1, 2, 0, 3, E));
  }
}

/// Division by multiply and shift: exact for every numerator below 2^31,
/// checked at the edges of each divisor's range and at random.
TEST(HostMath, FastDivision) {
  uint64_t Seed = 1;
  auto Next = [&] {
    Seed = Seed * 6364136223846793005ull + 1442695040888963407ull;
    return uint32_t(Seed >> 33); // below 2^31
  };
  std::vector<uint32_t> Divisors = {1, 2, 3, 5, 7, 24, 25, 32, 64, 100, 1000,
                                    1024, 4095, 4096, 4097, 32000, 50257,
                                    (1u << 30) - 1, 1u << 30, (1u << 31) - 1};
  for (int I = 0; I < 200; ++I)
    Divisors.push_back(Next() % 100000 + 1);
  int Wrong = 0;
  for (uint32_t D : Divisors) {
    FastDivmod F(D);
    std::vector<uint32_t> Ns = {0, 1, D - 1, D, D + 1, 2 * D - 1,
                                (1u << 31) - 1, (1u << 31) - D};
    for (int I = 0; I < 2000; ++I)
      Ns.push_back(Next());
    for (uint32_t N : Ns) {
      if (N >= (1u << 31))
        continue;
      uint32_t R;
      uint32_t Q = F.divmod(N, R);
      Wrong += Q != N / D || R != N % D;
    }
  }
  EXPECT(Wrong == 0);
}

/// The host side of offload copies: every element converted once, on any
/// number of threads, accumulating when asked.
TEST(HostMath, HostConversions) {
  const uint64_t N = 300001;
  std::vector<uint16_t> Half(N);
  std::vector<float> Sum(N), Want(N);
  for (uint64_t I = 0; I < N; ++I) {
    Half[I] = toBF16(float(int64_t(I % 97) - 48) / 16);
    Sum[I] = float(I % 5);
    Want[I] = Sum[I] + fromBF16(Half[I]);
  }
  for (unsigned Threads : {1u, 3u, 8u}) {
    std::vector<float> Out = Sum;
    convertOnHost(Out.data(), ElementType::F32, Half.data(), ElementType::BF16,
                  N, true, Threads);
    EXPECT(Out == Want);
    std::vector<uint16_t> Back(N, 0xffff);
    convertOnHost(Back.data(), ElementType::BF16, Out.data(), ElementType::F32,
                  N, false, Threads);
    bool Same = true;
    for (uint64_t I = 0; I < N; ++I)
      Same &= Back[I] == toBF16(Want[I]);
    EXPECT(Same);
  }
}

/// The host's typed (vectorized) loops against the generic element-by-
/// element ones, bit for bit, on every kind of value: NaNs, infinities,
/// subnormals and both roundings' halfway cases.
TEST(HostMath, VectorizedHostLoops) {
  const uint64_t N = 100003;
  uint64_t State = 12345;
  auto Bits = [&] { return uint32_t((State = mix(State)) >> 13); };
  std::vector<uint16_t> Half(N);
  std::vector<float> Wide(N), Master(N), M(N), V(N);
  for (uint64_t I = 0; I < N; ++I) {
    Half[I] = uint16_t(Bits());
    uint32_t U = Bits();
    // Mostly ordinary magnitudes, some of every other kind.
    if (I % 7)
      U = (U & 0x807fffffu) | ((100u + U % 60u) << 23);
    Wide[I] = bitsFloat(U);
    Master[I] = float(int(Bits() % 2001) - 1000) / 1024;
    M[I] = float(int(Bits() % 2001) - 1000) / 65536;
    V[I] = float(Bits() % 1000) / 1048576;
  }
  auto SameBits = [](const auto &X, const auto &Y) {
    return X.size() == Y.size() &&
           !memcmp(X.data(), Y.data(), X.size() * sizeof(X[0]));
  };
  // A sum of two NaNs is a NaN, but which one the compiler's operand order
  // decides: nothing else may differ.
  auto SameSums = [](const auto &X, const auto &Y) {
    for (size_t I = 0; I < X.size(); ++I) {
      float A, B;
      if constexpr (sizeof(X[0]) == 2)
        A = fromBF16(X[I]), B = fromBF16(Y[I]);
      else
        A = X[I], B = Y[I];
      if (floatBits(A) != floatBits(B) && !(std::isnan(A) && std::isnan(B)))
        return false;
    }
    return X.size() == Y.size();
  };
  for (bool Accumulate : {false, true}) {
    std::vector<float> Fast = Wide, Slow = Wide;
    convertOnHost(Fast.data(), ElementType::F32, Half.data(),
                  ElementType::BF16, N, Accumulate, 3);
    for (uint64_t I = 0; I < N; ++I)
      Slow[I] = Accumulate ? fromBF16(Half[I]) + Slow[I] : fromBF16(Half[I]);
    EXPECT(Accumulate ? SameSums(Fast, Slow) : SameBits(Fast, Slow));
  }
  for (bool Accumulate : {false, true}) {
    std::vector<uint16_t> Fast(N), Slow(N);
    for (uint64_t I = 0; I < N; ++I)
      Fast[I] = Slow[I] = uint16_t(Bits());
    convertOnHost(Fast.data(), ElementType::BF16, Half.data(),
                  ElementType::BF16, N, Accumulate, 3);
    for (uint64_t I = 0; I < N; ++I)
      Slow[I] = toBF16(Accumulate ? fromBF16(Half[I]) + fromBF16(Slow[I])
                                  : fromBF16(Half[I]));
    EXPECT(Accumulate ? SameSums(Fast, Slow) : SameBits(Fast, Slow));
  }
  std::vector<uint16_t> Fast16(N), Slow16(N);
  convertOnHost(Fast16.data(), ElementType::BF16, Wide.data(), ElementType::F32,
                N, false, 3);
  for (uint64_t I = 0; I < N; ++I)
    Slow16[I] = toBF16(Wide[I]);
  EXPECT(SameBits(Fast16, Slow16));

  plan::Info S;
  S.WorldSize = 2;
  S.LearningRate = "0.001";
  S.WeightDecay = "0.1";
  std::string Error;
  AdamW A = adamwFor(S, 3, Error);
  for (ElementType T : {ElementType::F32, ElementType::BF16, ElementType::F16}) {
    std::vector<float> Grad32(N);
    for (uint64_t I = 0; I < N; ++I)
      Grad32[I] = float(int(Bits() % 4001) - 2000) / 4096;
    std::vector<uint16_t> Grad16(N);
    for (uint64_t I = 0; I < N; ++I)
      Grad16[I] = T == ElementType::F16 ? toFP16(Grad32[I]) : toBF16(Grad32[I]);
    const void *G = T == ElementType::F32 ? static_cast<const void *>(Grad32.data())
                                          : Grad16.data();
    std::vector<float> FM = Master, FMo = M, FV = V, SM = Master, SMo = M,
                       SV = V;
    hostAdamW(A, G, T, FM.data(), FMo.data(), FV.data(), N, 5);
    for (uint64_t I = 0; I < N; ++I)
      adamwUpdate(A, loadAs(G, I, T), SM[I], SMo[I], SV[I]);
    EXPECT(SameBits(FM, SM) && SameBits(FMo, SMo) && SameBits(FV, SV));
    // With the 16-bit copy written in the same pass: the same update, and
    // each copy what convertOnHost makes of the updated master, bf16 on
    // the vectorized path, fp16 on the generic one.
    for (ElementType PT : {ElementType::BF16, ElementType::F16}) {
      std::vector<float> WM = Master, WMo = M, WV = V;
      std::vector<uint16_t> Params(N, 0xffff), Expected(N);
      hostAdamW(A, G, T, WM.data(), WMo.data(), WV.data(), N, 5,
                Params.data(), PT);
      convertOnHost(Expected.data(), PT, WM.data(), ElementType::F32, N, false,
                    3);
      EXPECT(SameBits(WM, SM) && SameBits(WMo, SMo) && SameBits(WV, SV));
      EXPECT(Params == Expected);
    }
  }

  // The norm's sum: the same double on any number of threads, and the
  // generic path's for fp32 gradients.
  double One = sumOfSquares(Master.data(), ElementType::F32, N, 1);
  EXPECT(sumOfSquares(Master.data(), ElementType::F32, N, 7) == One);
  double Chunked = 0;
  for (unsigned K = 0; K < 64; ++K) {
    double Part = 0;
    for (uint64_t I = N * K / 64; I < N * (K + 1) / 64; ++I) {
      double X = loadAs(Master.data(), I, ElementType::F32);
      Part += X * X;
    }
    Chunked += Part;
  }
  EXPECT(One == Chunked);
  // bf16 gradients (stage 3's) sum as their fp32 values do.
  std::vector<uint16_t> Rounded(N);
  std::vector<float> Widened(N);
  for (uint64_t I = 0; I < N; ++I)
    Widened[I] = fromBF16(Rounded[I] = toBF16(Master[I]));
  EXPECT(sumOfSquares(Rounded.data(), ElementType::BF16, N, 4) ==
         sumOfSquares(Widened.data(), ElementType::F32, N, 1));
}

/// The host's thread pool: each task once, and no more threads than asked
/// even after an earlier call grew the pool.
TEST(HostMath, HostPool) {
  std::vector<int> Runs(1000, 0);
  parallelTasks(1000, 6, [&](unsigned K) { ++Runs[K]; });
  EXPECT(std::all_of(Runs.begin(), Runs.end(), [](int R) { return R == 1; }));
  std::mutex M;
  std::set<std::thread::id> Ids;
  parallelTasks(64, 2, [&](unsigned) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::lock_guard<std::mutex> Lock(M);
    Ids.insert(std::this_thread::get_id());
  });
  EXPECT(Ids.size() <= 2);
  // The triad the host optimizer's rate is held against: a figure only
  // when the passes computed what they should (any host streams more than
  // 100 MB/s).
  double Triad = hostTriadBytesPerSec(2);
  EXPECT(std::isfinite(Triad) && Triad > 1e8);
}

TEST(HostMath, Adam) {
  plan::Info S;
  S.WorldSize = 2;
  S.LearningRate = "0.001";
  S.WeightDecay = "0.01";
  std::string Error;
  AdamW A = adamwFor(S, 1, Error);
  EXPECT(Error.empty());
  EXPECT(A.GradScale == 0.5f);
  const uint64_t N = 200000;
  std::vector<float> G(N), P1(N), M1(N, 0), V1(N, 0);
  for (uint64_t I = 0; I < N; ++I) {
    G[I] = syntheticGrad(0, 1, 0, 7, I) + syntheticGrad(1, 1, 0, 7, I);
    P1[I] = initialWeight(7, I);
  }
  std::vector<float> P4 = P1, M4 = M1, V4 = V1;
  hostAdamW(A, G.data(), ElementType::F32, P1.data(), M1.data(), V1.data(), N,
            1);
  hostAdamW(A, G.data(), ElementType::F32, P4.data(), M4.data(), V4.data(), N,
            4);
  EXPECT(P1 == P4 && M1 == M4 && V1 == V4);
  for (uint64_t I = 0; I < N; I += 997) {
    double Gd = double(G[I]) * 0.5, Md = 0.1 * Gd, Vd = 0.001 * Gd * Gd;
    double Pd = initialWeight(7, I);
    double Ref = Pd - 0.001 * ((Md / 0.1) / (std::sqrt(Vd / 0.001) + 1e-8) +
                               0.01 * Pd);
    EXPECT(std::fabs(Ref - P1[I]) < 1e-6);
  }
  // Gradients read as bf16 give the same update as the same values in fp32.
  std::vector<uint16_t> G16(N);
  for (uint64_t I = 0; I < N; ++I)
    G16[I] = toBF16(G[I]);
  std::vector<float> P2(N), M2(N, 0), V2(N, 0);
  for (uint64_t I = 0; I < N; ++I)
    P2[I] = initialWeight(7, I);
  hostAdamW(A, G16.data(), ElementType::BF16, P2.data(), M2.data(), V2.data(),
            N, 2);
  EXPECT(P2 == P1);
}

// adam_w_mode false, bias_correction false, gradient_allreduce_op sum: the
// decay joins the gradient before the moments, no 1 - beta^t divides them,
// and the summed gradient is not averaged (FusedAdam's ADAM_MODE_0).
TEST(HostMath, AdamL2WithoutBiasCorrectionSummed) {
  plan::Info S;
  S.WorldSize = 2;
  S.LearningRate = "0.001";
  S.WeightDecay = "0.01";
  S.DecoupledWeightDecay = false;
  S.BiasCorrection = false;
  S.AverageGradients = false;
  std::string Error;
  AdamW A = adamwFor(S, 3, Error);
  EXPECT(Error.empty());
  EXPECT(A.GradScale == 1.0f && A.BiasCorrection1 == 1.0f &&
         A.BiasCorrection2 == 1.0f && !A.DecoupledDecay);
  const uint64_t N = 4096;
  std::vector<float> G(N), P(N), M(N, 0), V(N, 0);
  for (uint64_t I = 0; I < N; ++I) {
    G[I] = syntheticGrad(0, 1, 0, 5, I) + syntheticGrad(1, 1, 0, 5, I);
    P[I] = initialWeight(5, I);
  }
  hostAdamW(A, G.data(), ElementType::F32, P.data(), M.data(), V.data(), N, 2);
  for (uint64_t I = 0; I < N; I += 97) {
    double Pd = initialWeight(5, I);
    double Gd = double(G[I]) + 0.01 * Pd;
    double Md = 0.1 * Gd, Vd = 0.001 * Gd * Gd;
    double Ref = Pd - 0.001 * (Md / (std::sqrt(Vd) + 1e-8));
    EXPECT(std::fabs(Ref - P[I]) < 1e-6);
  }
}

// bf16 master weights and moments (bf16_master_weights_and_grads with
// bf16_optimizer_states): the clipped gradient is rounded to bf16 before the
// update, the update runs in fp32, and weight and moments come back as
// bf16 values, each the fp32 result rounded to nearest even.
TEST(HostMath, AdamWithBF16State) {
  plan::Info S;
  S.WorldSize = 2;
  S.LearningRate = "0.001";
  S.WeightDecay = "0.01";
  S.MasterDType = plan::DType::BF16;
  S.OptimizerStateDType = plan::DType::BF16;
  std::string Error;
  AdamW A = adamwFor(S, 2, Error);
  EXPECT(Error.empty() && A.BF16State);
  AdamW Wide = A;
  Wide.BF16State = false;
  A.GradScale *= 0.37f; // A clipping factor.
  Wide.GradScale *= 0.37f;
  unsigned Rounded = 0;
  for (uint64_t I = 0; I < 4096; ++I) {
    float G = syntheticGrad(0, 2, 0, 3, I);
    float P = roundedToBF16(initialWeight(3, I));
    float M = roundedToBF16(0.01f * G), V = roundedToBF16(0.001f * G * G);
    float P32 = P, M32 = M, V32 = V;
    adamwUpdate(A, G, P, M, V);
    adamwUpdate(Wide, roundedToBF16(G * Wide.GradScale) / Wide.GradScale, P32,
                M32, V32);
    EXPECT(floatBits(P) == floatBits(roundedToBF16(P32)));
    EXPECT(floatBits(M) == floatBits(roundedToBF16(M32)));
    EXPECT(floatBits(V) == floatBits(roundedToBF16(V32)));
    Rounded += floatBits(P) != floatBits(P32);
  }
  EXPECT(Rounded > 1000); // The rounding is there, not a no-op.
}

// ZeRO++ qwZ: DeepSpeed's group count (its loop, written out) and its
// quantizer's arithmetic on values whose bytes are known.
TEST(HostMath, QwzGroupsAndRoundTrip) {
  auto DeepSpeedGroups = [](uint64_t N) -> uint64_t {
    if (N % 8) // Its loop counts up to N, where the assertion fails.
      return 0;
    uint64_t G = (N + 7999) / 8000;
    while (G < N && N % (8 * G))
      ++G;
    while (N % (16 * G) == 0 && N > 8000 * G)
      G *= 2;
    return N % (8 * G) == 0 && N < 16000 * G && N > G ? G : 0;
  };
  for (uint64_t N = 1; N < 40000; ++N)
    ASSERT_EQ(dsc::plan::qwzGroups(N), DeepSpeedGroups(N)) << N;
  for (uint64_t N : {80056ull, 2048ull * 4096, 8ull * 1000003, 128256ull * 2048})
    EXPECT_EQ(dsc::plan::qwzGroups(N), DeepSpeedGroups(N)) << N;
  EXPECT_EQ(dsc::plan::qwzGroups(80056), 10007u); // 8 x a prime
  EXPECT_EQ(dsc::plan::qwzGroups(100), 0u);

  // Largest magnitude 1: scale 128, 1 clamps to 127; 2.5 rounds to even
  // 2; an all-zero group stays zero (scale 1).
  const float In[8] = {1.0f, -0.5f, 0.25f, 2.5f / 128, 0, 0, 0, 0};
  std::vector<float> Out = qwzRoundTrip(In, 8, 2);
  const float Want[8] = {127.0f / 128, -0.5f, 0.25f, 2.0f / 128, 0, 0, 0, 0};
  for (int I = 0; I < 8; ++I)
    EXPECT_EQ(Out[I], Want[I]) << I;
  // Values pass through fp16 on both sides: 1/3 becomes the half nearest
  // it before it is scaled, and the result is a half.
  const float Third[8] = {1.0f / 3, 1, 1, 1, 1, 1, 1, 1};
  float Q = qwzRoundTrip(Third, 8, 1)[0];
  EXPECT_EQ(Q, qwzHalf(std::rint(qwzHalf(1.0f / 3) * 128) / 128));
  EXPECT_EQ(Q, 43.0f / 128);
  // Beyond fp16's range: an infinite magnitude makes the scale 0, its
  // product NaN, stored as byte 0 (DeepSpeed's __float2int_rn does the
  // same), and the kept scale infinite: the group dequantizes to NaN.
  const float Huge[8] = {1e6f, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(qwzScale(qwzHalf(1e6f)), 0.0f);
  EXPECT_EQ(qwzQuantize(qwzHalf(1e6f), 0.0f), 0);
  EXPECT_TRUE(std::isnan(qwzRoundTrip(Huge, 8, 1)[0]));
}

// ZeRO++ qgZ: which gradients DeepSpeed quantizes and in what groups, and
// its 4-bit reduction on values whose every rounding is known.
TEST(HostMath, QgzTensorsAndReduction) {
  plan::Info S;
  S.WorldSize = 4;
  auto Of = [&](std::vector<int64_t> Shape) {
    plan::Tensor T;
    T.Shape = Shape;
    T.Elems = 1;
    for (int64_t D : Shape)
      T.Elems *= uint64_t(D);
    return plan::qgzTensor(S, T);
  };
  // A matrix: max(rows, columns, world) groups; a vector, and a matrix
  // whose elements are not a multiple of twice the world, reduce plain.
  plan::QgzTensor Q = Of({176, 64});
  EXPECT(Q.Quantized && Q.Groups == 176 && Q.GroupSize == 64);
  EXPECT(!Of({64}).Quantized && !Of({3, 5}).Quantized);
  EXPECT(plan::qgzMisfit(S, Q).empty());
  // GPT-2's embedding at 4 ranks: 50257 groups do not split over them.
  EXPECT(plan::qgzMisfit(S, Of({50257, 768})).find("do not split") !=
         std::string::npos);
  // Groups of 12; and of 4 x 65536 (a 3-D tensor: the largest of its
  // first two dimensions is 8).
  EXPECT(plan::qgzMisfit(S, Of({4, 12})).find("multiple of 8") !=
         std::string::npos);
  EXPECT(plan::qgzMisfit(S, Of({4, 8, 65536})).find("40960") !=
         std::string::npos);

  // Two bytes a pair, the first in the high half, signs kept.
  for (int A = -8; A < 8; ++A)
    for (int B = -8; B < 8; ++B)
      EXPECT(qgzFirst(qgzPack(A, B)) == A && qgzSecond(qgzPack(A, B)) == B);
  // 2 nodes of 2 ranks, each rank's group [8, 4, -2, 1]: scale 1, and 8
  // clamps to 7. A node sums [14, 8, -4, 2]: scale 16 / 28, kept 1.75, so
  // [7, 5, -2, 1] x 1.75; the nodes' sum [24.5, 17.5, -7, 3.5], times 0.5
  // (DeepSpeed's division by the nodes).
  std::vector<float> Out = qgzReducePartition(
      4, 4, 2, 2, 0.5f, [](uint32_t, uint64_t I) {
        const float G[4] = {8, 4, -2, 1};
        return G[I];
      });
  const float Want[4] = {12.25f, 8.75f, -3.5f, 1.75f};
  for (int I = 0; I < 4; ++I)
    EXPECT(Out[I] == Want[I]);
  // A group of zeros stays zero; an infinite gradient leaves its group NaN
  // (fp16's overflow check sees it), the other group finite.
  Out = qgzReducePartition(8, 4, 2, 2, 1.0f, [](uint32_t Rank, uint64_t I) {
    return Rank == 3 && I == 5 ? INFINITY : I < 4 ? 0.0f : 1.0f;
  });
  EXPECT(Out[0] == 0 && Out[3] == 0 && std::isnan(Out[4]) && std::isnan(Out[7]));
}

/// fp16 loss scaling, step by step as DeepSpeed's DynamicLossScaler goes.
TEST(HostMath, LossScaling) {
  plan::Info S;
  S.ParamDType = plan::DType::F16;
  S.InitialScalePower = 4;
  S.LossScaleWindow = 3;
  S.Hysteresis = 2;
  S.MinLossScale = 2;
  LossScaler A(S);
  EXPECT(A.dynamic() && A.scale() == 16);
  EXPECT(A.update(true).empty() && A.scale() == 16); // Hysteresis 2 -> 1.
  EXPECT(A.update(true).empty() && A.scale() == 8);  // Then it halves.
  for (int Clean = 0; Clean < 3; ++Clean) {
    EXPECT(A.scaleIfApplied() == 8);
    EXPECT(A.update(false).empty() && A.scale() == 8);
  }
  // The window's third clean step past the overflow doubles the scale,
  // and the optimizer already divides that step's gradients by 16.
  EXPECT(A.scaleIfApplied() == 16);
  EXPECT(A.update(false).empty() && A.scale() == 16);
  EXPECT(A.state().Hysteresis == 2 && A.state().Iteration == 6 &&
         A.state().LastOverflow == 1);

  // Without consecutive hysteresis a clean step in between leaves it used.
  S.Hysteresis = 2;
  LossScaler B(S);
  B.update(true);
  B.update(false);
  B.update(true);
  EXPECT(B.scale() == 8);
  S.ConsecutiveHysteresis = true;
  LossScaler C(S);
  C.update(true);
  C.update(false);
  C.update(true);
  EXPECT(C.scale() == 16);

  // Halving stops at the minimum; an overflow there ends the run.
  S = plan::Info();
  S.ParamDType = plan::DType::F16;
  S.InitialScalePower = 2;
  S.Hysteresis = 1;
  S.MinLossScale = 3;
  LossScaler D(S);
  EXPECT(D.update(true).empty() && D.scale() == 3);
  EXPECT(D.update(true).find("minimum loss scale (3") != std::string::npos);

  // A static scale never moves; bf16 has none.
  S.LossScale = "128";
  LossScaler E(S);
  EXPECT(!E.dynamic() && E.scale() == 128 && E.scaleIfApplied() == 128);
  EXPECT(E.update(true).empty() && E.scale() == 128);
  S.ParamDType = plan::DType::BF16;
  EXPECT(LossScaler(S).scale() == 1 && LossScaler(S).update(true).empty());

  // What a checkpoint keeps brings it back exactly.
  LossScaler F(plan::Info{});
  F.restore(A.state());
  EXPECT(F.scale() == 16 && F.state().Iteration == 6);
}
