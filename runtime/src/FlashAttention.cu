//===- FlashAttention.cu - Tiled attention on tensor cores ----------------===//
//
// Flash attention in the FlashAttention-2 arrangement. A block of four
// warps takes 64 rows (queries, or keys in the backward's dK/dV pass), 16
// per warp, and walks the other side in tiles of 64 staged through shared
// memory. Products are mma.sync m16n8k16 with fp32 accumulators, whose
// register layout lets a warp turn its score tile straight into the A
// operand of the next product: scores never leave registers.
//
// Forward: online softmax per row (running max and sum, in base 2), the
// output rescaled as the max grows; writes O and the log-sum-exp.
// Backward, in three launches and without atomics (the result does not
// depend on scheduling):
//   delta = rowsum(dO * O)
//   per key tile:   P^T, dV += P^T dO, dP^T = V dO^T, dS^T, dK += dS^T Q
//                   (over every query head of the key/value head's group)
//   per query tile: P, dP = dO V^T, dS, dQ += dS K
// P is recomputed from the saved log-sum-exp in both passes.
//
// Shared tiles are row-major with 8 elements of padding per row, so the
// fragment loads of a warp (8 rows x 4 words) hit 32 distinct banks.
// Operands whose B side is not k-contiguous in memory (V in P V, dO in
// P^T dO, Q in dS^T Q, K in dS K) are also staged transposed.
//
//===----------------------------------------------------------------------===//

#include "FlashAttention.h"

#include "dsc/FlashAttention.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace plan = dsc::plan;
using plan::KernelKind;

namespace dsrun {

namespace {

constexpr int Tile = 64;  // rows of a block and of each staged tile
constexpr int Warps = 4;  // 16 rows each
constexpr int Threads = Warps * 32;
constexpr int Pad = 8;    // elements after each shared row
constexpr int LdT = Tile + Pad; // row length of a transposed tile
constexpr float Log2e = 1.4426950408889634f, Ln2 = 0.6931471805599453f;

struct FlashParams {
  const void *Q, *K, *V, *O, *Do;
  void *Out, *Dq, *Dk, *Dv;
  float *Lse;   // through LseS
  float *Delta; // [B, Hq, T], dense
  // Strides (elements) of batch, head and row; the head dim is dense.
  int64_t QS[3], KS[3], VS[3], OS[3], DoS[3], OutS[3], DqS[3], DkS[3],
      DvS[3], LseS[3];
  int B, Hq, Hkv, T, S, D;
  float Scale; // of the scores, natural units
  bool Causal;
};

//===----------------------------------------------------------------------===//
// Tensor-core products and fragments
//===----------------------------------------------------------------------===//

// mma.sync on 16-bit floats needs sm_80; flashAttention() refuses older
// devices before a launch, so older targets compile to a trap.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define DSRUN_MMA(Type) __trap();
#else
#define DSRUN_MMA(Type)                                                        \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." Type "." Type ".f32 "  \
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"       \
               : "+f"(C[0]), "+f"(C[1]), "+f"(C[2]), "+f"(C[3])                \
               : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B0),         \
                 "r"(B1));
#endif

template <class E> struct Mma;
template <> struct Mma<__nv_bfloat16> {
  static __device__ __forceinline__ void run(float C[4], const uint32_t A[4],
                                             uint32_t B0, uint32_t B1) {
    DSRUN_MMA("bf16")
  }
  static __device__ __forceinline__ uint32_t pack(float Lo, float Hi) {
    __nv_bfloat162 V = __floats2bfloat162_rn(Lo, Hi);
    return *reinterpret_cast<uint32_t *>(&V);
  }
  static __device__ __forceinline__ float load(const __nv_bfloat16 &X) {
    return __bfloat162float(X);
  }
};
template <> struct Mma<__half> {
  static __device__ __forceinline__ void run(float C[4], const uint32_t A[4],
                                             uint32_t B0, uint32_t B1) {
    DSRUN_MMA("f16")
  }
  static __device__ __forceinline__ uint32_t pack(float Lo, float Hi) {
    __half2 V = __floats2half2_rn(Lo, Hi);
    return *reinterpret_cast<uint32_t *>(&V);
  }
  static __device__ __forceinline__ float load(const __half &X) {
    return __half2float(X);
  }
};

/// The A fragment (16 x 16) at (Row0, K0) of a shared tile of Ld elements
/// per row: thread (g, c) = (lane / 4, lane % 4) holds rows g and g + 8,
/// columns 2c, 2c + 1 and 2c + 8, 2c + 9.
template <int Ld>
__device__ __forceinline__ void loadA(uint32_t A[4], const void *Tile_,
                                      int Row0, int K0) {
  constexpr int W = Ld / 2;
  int Lane = threadIdx.x % 32, G = Lane >> 2, C = Lane & 3;
  const uint32_t *P =
      static_cast<const uint32_t *>(Tile_) + (Row0 + G) * W + K0 / 2 + C;
  A[0] = P[0];
  A[1] = P[8 * W];
  A[2] = P[4];
  A[3] = P[8 * W + 4];
}

/// The B fragment (16 x 8, k x n) at (K0, N0) of a product whose B^T is
/// the shared tile (n rows, k contiguous).
template <int Ld>
__device__ __forceinline__ void loadB(uint32_t &B0, uint32_t &B1,
                                      const void *Tile_, int N0, int K0) {
  constexpr int W = Ld / 2;
  int Lane = threadIdx.x % 32, G = Lane >> 2, C = Lane & 3;
  const uint32_t *P =
      static_cast<const uint32_t *>(Tile_) + (N0 + G) * W + K0 / 2 + C;
  B0 = P[0];
  B1 = P[4];
}

/// The A fragment of a 16 x 64 tile held as four accumulators per 8
/// columns (the layout a product leaves), packed to 16 bits.
template <class E>
__device__ __forceinline__ void accumulatorAsA(uint32_t A[4],
                                               const float (&X)[8][4],
                                               int Kk) {
  A[0] = Mma<E>::pack(X[2 * Kk][0], X[2 * Kk][1]);
  A[1] = Mma<E>::pack(X[2 * Kk][2], X[2 * Kk][3]);
  A[2] = Mma<E>::pack(X[2 * Kk + 1][0], X[2 * Kk + 1][1]);
  A[3] = Mma<E>::pack(X[2 * Kk + 1][2], X[2 * Kk + 1][3]);
}

/// The two products every kernel here is made of, for one warp's 16 rows.
/// Scores: S (16 x 64) += rows [Row0, Row0 + 16) of shared tile X times
/// the transpose of shared tile Y (64 rows), both of DP columns.
template <class E, int DP>
__device__ __forceinline__ void timesTransposed(float (&S)[8][4], const E *X,
                                                int Row0, const E *Y) {
  constexpr int Ld = DP + Pad;
#pragma unroll
  for (int Kk = 0; Kk < DP / 16; ++Kk) {
    uint32_t A[4];
    loadA<Ld>(A, X, Row0, Kk * 16);
#pragma unroll
    for (int N = 0; N < 8; ++N) {
      uint32_t B0, B1;
      loadB<Ld>(B0, B1, Y, N * 8, Kk * 16);
      Mma<E>::run(S[N], A, B0, B1);
    }
  }
}

/// Values: O (16 x DP) += P (16 x 64, as a product leaves it) times the
/// 64-row tile whose transpose Yt ([DP][64 + Pad]) is staged.
template <class E, int DP>
__device__ __forceinline__ void accumulate(float (&O)[DP / 8][4],
                                           const float (&P)[8][4],
                                           const E *Yt) {
#pragma unroll
  for (int Kk = 0; Kk < Tile / 16; ++Kk) {
    uint32_t A[4];
    accumulatorAsA<E>(A, P, Kk);
#pragma unroll
    for (int N = 0; N < DP / 8; ++N) {
      uint32_t B0, B1;
      loadB<LdT>(B0, B1, Yt, N * 8, Kk * 16);
      Mma<E>::run(O[N], A, B0, B1);
    }
  }
}

/// Rows [Row0, Row0 + 64) of a [Rows, D] view (row stride RowStride) into
/// a shared tile [64][DP + Pad], and transposed into [DP][64 + Pad] when
/// Transposed is given; zeros beyond Rows and D.
template <class E, int DP>
__device__ void stage(E *Rowwise, E *Transposed, const E *Base,
                      int64_t RowStride, int Row0, int Rows, int D) {
  constexpr int Chunks = DP / 8, Ld = DP + Pad;
  for (int I = threadIdx.x; I < Tile * Chunks; I += Threads) {
    int R = I / Chunks, C = I % Chunks;
    uint4 V = make_uint4(0, 0, 0, 0);
    if (Row0 + R < Rows && C * 8 < D)
      V = *reinterpret_cast<const uint4 *>(Base + int64_t(Row0 + R) * RowStride +
                                           C * 8);
    if (Rowwise)
      *reinterpret_cast<uint4 *>(Rowwise + R * Ld + C * 8) = V;
    if (Transposed) {
      const E *X = reinterpret_cast<const E *>(&V);
#pragma unroll
      for (int K = 0; K < 8; ++K)
        Transposed[(C * 8 + K) * LdT + R] = X[K];
    }
  }
}

__device__ __forceinline__ float rowMax(float V) {
  V = fmaxf(V, __shfl_xor_sync(0xffffffffu, V, 1));
  return fmaxf(V, __shfl_xor_sync(0xffffffffu, V, 2));
}
__device__ __forceinline__ float rowSum(float V) {
  V += __shfl_xor_sync(0xffffffffu, V, 1);
  return V + __shfl_xor_sync(0xffffffffu, V, 2);
}

/// Key tiles a query tile starting at Q0 attends to.
__device__ __forceinline__ int keyTiles(const FlashParams &P, int Q0) {
  int Tiles = (P.S + Tile - 1) / Tile;
  if (P.Causal)
    Tiles = min(Tiles, (min(Q0 + Tile, P.T) - 1) / Tile + 1);
  return Tiles;
}

/// Writes rows Row0 + g and Row0 + g + 8 of a warp's 16 x DP accumulator
/// (columns below D), scaled per row, to Base (row stride RowStride).
template <class E, int DP>
__device__ void storeRows(E *Base, int64_t RowStride, int Row0, int Rows,
                          int D, const float (&X)[DP / 8][4],
                          const float Scale[2]) {
  int Lane = threadIdx.x % 32, G = Lane >> 2, C = Lane & 3;
#pragma unroll
  for (int R = 0; R < 2; ++R) {
    int Row = Row0 + G + 8 * R;
    if (Row >= Rows)
      continue;
    E *Out = Base + int64_t(Row) * RowStride;
#pragma unroll
    for (int N = 0; N < DP / 8; ++N) {
      int Col = N * 8 + C * 2;
      if (Col < D)
        *reinterpret_cast<uint32_t *>(Out + Col) = Mma<E>::pack(
            X[N][2 * R] * Scale[R], X[N][2 * R + 1] * Scale[R]);
    }
  }
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

template <class E, int DP>
__global__ void __launch_bounds__(Threads)
    flashForward(const __grid_constant__ FlashParams P) {
  constexpr int Ld = DP + Pad;
  extern __shared__ __align__(16) unsigned char Smem[];
  E *Qs = reinterpret_cast<E *>(Smem);
  E *Ks = Qs + Tile * Ld;
  E *Vt = Ks + Tile * Ld; // [DP][LdT]
  // The longest causal rows first, so the short ones fill the tail.
  int Q0 = (gridDim.x - 1 - blockIdx.x) * Tile;
  int H = blockIdx.y, Bt = blockIdx.z, Hk = H / (P.Hq / P.Hkv);
  int Warp = threadIdx.x / 32, Lane = threadIdx.x % 32, G = Lane >> 2,
      C = Lane & 3;
  const E *Qb = static_cast<const E *>(P.Q) + Bt * P.QS[0] + H * P.QS[1];
  const E *Kb = static_cast<const E *>(P.K) + Bt * P.KS[0] + Hk * P.KS[1];
  const E *Vb = static_cast<const E *>(P.V) + Bt * P.VS[0] + Hk * P.VS[1];
  stage<E, DP>(Qs, nullptr, Qb, P.QS[2], Q0, P.T, P.D);
  __syncthreads();
  uint32_t Qa[DP / 16][4];
#pragma unroll
  for (int Kk = 0; Kk < DP / 16; ++Kk)
    loadA<Ld>(Qa[Kk], Qs, Warp * 16, Kk * 16);

  float O[DP / 8][4] = {};
  float M[2] = {-INFINITY, -INFINITY}, L[2] = {0, 0};
  float Scale2 = P.Scale * Log2e;
  int Row[2] = {Q0 + Warp * 16 + G, Q0 + Warp * 16 + G + 8};
  int Tiles = keyTiles(P, Q0);
  for (int J = 0; J < Tiles; ++J) {
    int K0 = J * Tile;
    __syncthreads();
    stage<E, DP>(Ks, nullptr, Kb, P.KS[2], K0, P.S, P.D);
    stage<E, DP>(nullptr, Vt, Vb, P.VS[2], K0, P.S, P.D);
    __syncthreads();
    float Sc[8][4] = {};
#pragma unroll
    for (int Kk = 0; Kk < DP / 16; ++Kk)
#pragma unroll
      for (int N = 0; N < 8; ++N) {
        uint32_t B0, B1;
        loadB<Ld>(B0, B1, Ks, N * 8, Kk * 16);
        Mma<E>::run(Sc[N], Qa[Kk], B0, B1);
      }
    float Mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int N = 0; N < 8; ++N)
#pragma unroll
      for (int X = 0; X < 4; ++X) {
        int Col = K0 + N * 8 + C * 2 + (X & 1);
        float V = Sc[N][X] * Scale2;
        if (Col >= P.S || (P.Causal && Col > Row[X >> 1]))
          V = -INFINITY;
        Sc[N][X] = V;
        Mx[X >> 1] = fmaxf(Mx[X >> 1], V);
      }
    float Ref[2], Alpha[2];
#pragma unroll
    for (int R = 0; R < 2; ++R) {
      float Max = fmaxf(M[R], rowMax(Mx[R]));
      // A row with every key so far masked keeps weight 0, not NaN.
      Ref[R] = Max == -INFINITY ? 0.0f : Max;
      Alpha[R] = exp2f(M[R] - Ref[R]);
      M[R] = Max;
      L[R] *= Alpha[R];
    }
#pragma unroll
    for (int N = 0; N < 8; ++N)
#pragma unroll
      for (int X = 0; X < 4; ++X) {
        float V = exp2f(Sc[N][X] - Ref[X >> 1]);
        Sc[N][X] = V;
        L[X >> 1] += V;
      }
#pragma unroll
    for (int N = 0; N < DP / 8; ++N) {
      O[N][0] *= Alpha[0];
      O[N][1] *= Alpha[0];
      O[N][2] *= Alpha[1];
      O[N][3] *= Alpha[1];
    }
    accumulate<E, DP>(O, Sc, Vt);
  }
  float Inv[2];
#pragma unroll
  for (int R = 0; R < 2; ++R) {
    L[R] = rowSum(L[R]);
    Inv[R] = L[R] > 0 ? 1.0f / L[R] : 0.0f;
    if (C == 0 && Row[R] < P.T)
      P.Lse[Bt * P.LseS[0] + H * P.LseS[1] + Row[R] * P.LseS[2]] =
          L[R] > 0 ? (M[R] + log2f(L[R])) * Ln2 : INFINITY;
  }
  storeRows<E, DP>(static_cast<E *>(P.Out) + Bt * P.OutS[0] + H * P.OutS[1],
                   P.OutS[2], Q0 + Warp * 16, P.T, P.D, O, Inv);
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

/// delta[b, h, t] = sum_d dO * O, one warp per row.
template <class E>
__global__ void flashDelta(const __grid_constant__ FlashParams P) {
  int64_t Rows = int64_t(P.B) * P.Hq * P.T;
  int64_t Row = int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (Row >= Rows)
    return;
  int T = int(Row % P.T), H = int(Row / P.T % P.Hq), Bt = int(Row / P.T / P.Hq);
  const E *Do = static_cast<const E *>(P.Do) + Bt * P.DoS[0] + H * P.DoS[1] +
                T * P.DoS[2];
  const E *O = static_cast<const E *>(P.O) + Bt * P.OS[0] + H * P.OS[1] +
               T * P.OS[2];
  float Sum = 0;
  for (int D = threadIdx.x % 32; D < P.D; D += 32)
    Sum += Mma<E>::load(Do[D]) * Mma<E>::load(O[D]);
  for (int Off = 16; Off > 0; Off /= 2)
    Sum += __shfl_xor_sync(0xffffffffu, Sum, Off);
  if (threadIdx.x % 32 == 0)
    P.Delta[Row] = Sum;
}

/// dK and dV of one tile of 64 keys of one key/value head.
template <class E, int DP>
__global__ void __launch_bounds__(Threads)
    flashBackwardKeys(const __grid_constant__ FlashParams P) {
  constexpr int Ld = DP + Pad;
  extern __shared__ __align__(16) unsigned char Smem[];
  E *Ks = reinterpret_cast<E *>(Smem);
  E *Vs = Ks + Tile * Ld;
  E *Qs = Vs + Tile * Ld;
  E *Dos = Qs + Tile * Ld;
  E *Qt = Dos + Tile * Ld;  // [DP][LdT]
  E *Dot = Qt + DP * LdT;   // [DP][LdT]
  float *Lse2 = reinterpret_cast<float *>(Dot + DP * LdT);
  float *Delta = Lse2 + Tile;
  // Low key tiles see the most queries under a causal mask: first.
  int K0 = blockIdx.x * Tile;
  int Hk = blockIdx.y, Bt = blockIdx.z, Group = P.Hq / P.Hkv;
  int Warp = threadIdx.x / 32, Lane = threadIdx.x % 32, G = Lane >> 2,
      C = Lane & 3;
  stage<E, DP>(Ks, nullptr,
               static_cast<const E *>(P.K) + Bt * P.KS[0] + Hk * P.KS[1],
               P.KS[2], K0, P.S, P.D);
  stage<E, DP>(Vs, nullptr,
               static_cast<const E *>(P.V) + Bt * P.VS[0] + Hk * P.VS[1],
               P.VS[2], K0, P.S, P.D);
  float Dk[DP / 8][4] = {}, Dv[DP / 8][4] = {};
  float Scale2 = P.Scale * Log2e;
  int Key[2] = {K0 + Warp * 16 + G, K0 + Warp * 16 + G + 8};
  int QTiles = (P.T + Tile - 1) / Tile;
  for (int Gq = 0; Gq < Group; ++Gq) {
    int H = Hk * Group + Gq;
    const E *Qb = static_cast<const E *>(P.Q) + Bt * P.QS[0] + H * P.QS[1];
    const E *Dob = static_cast<const E *>(P.Do) + Bt * P.DoS[0] + H * P.DoS[1];
    for (int I = P.Causal ? K0 / Tile : 0; I < QTiles; ++I) {
      int Q0 = I * Tile;
      __syncthreads();
      stage<E, DP>(Qs, Qt, Qb, P.QS[2], Q0, P.T, P.D);
      stage<E, DP>(Dos, Dot, Dob, P.DoS[2], Q0, P.T, P.D);
      for (int R = threadIdx.x; R < Tile; R += Threads) {
        bool In = Q0 + R < P.T;
        Lse2[R] = In ? P.Lse[Bt * P.LseS[0] + H * P.LseS[1] +
                             (Q0 + R) * P.LseS[2]] * Log2e
                     : INFINITY;
        Delta[R] = In ? P.Delta[(int64_t(Bt) * P.Hq + H) * P.T + Q0 + R] : 0;
      }
      __syncthreads();
      // S^T = K Q^T, then P^T, for the warp's 16 keys x 64 queries.
      float St[8][4] = {};
      timesTransposed<E, DP>(St, Ks, Warp * 16, Qs);
#pragma unroll
      for (int N = 0; N < 8; ++N)
#pragma unroll
        for (int X = 0; X < 4; ++X) {
          int Qi = N * 8 + C * 2 + (X & 1), K = Key[X >> 1];
          float Pv = exp2f(St[N][X] * Scale2 - Lse2[Qi]);
          if (K >= P.S || (P.Causal && K > Q0 + Qi))
            Pv = 0;
          St[N][X] = Pv;
        }
      // dV += P^T dO
      accumulate<E, DP>(Dv, St, Dot);
      // dP^T = V dO^T
      float Dp[8][4] = {};
      timesTransposed<E, DP>(Dp, Vs, Warp * 16, Dos);
      // dS^T = P^T (dP^T - delta) scale; dK += dS^T Q
#pragma unroll
      for (int N = 0; N < 8; ++N)
#pragma unroll
        for (int X = 0; X < 4; ++X)
          St[N][X] *= (Dp[N][X] - Delta[N * 8 + C * 2 + (X & 1)]) * P.Scale;
      accumulate<E, DP>(Dk, St, Qt);
    }
  }
  const float One[2] = {1, 1};
  storeRows<E, DP>(static_cast<E *>(P.Dk) + Bt * P.DkS[0] + Hk * P.DkS[1],
                   P.DkS[2], K0 + Warp * 16, P.S, P.D, Dk, One);
  storeRows<E, DP>(static_cast<E *>(P.Dv) + Bt * P.DvS[0] + Hk * P.DvS[1],
                   P.DvS[2], K0 + Warp * 16, P.S, P.D, Dv, One);
}

/// dQ of one tile of 64 queries of one query head.
template <class E, int DP>
__global__ void __launch_bounds__(Threads)
    flashBackwardQueries(const __grid_constant__ FlashParams P) {
  constexpr int Ld = DP + Pad;
  extern __shared__ __align__(16) unsigned char Smem[];
  E *Qs = reinterpret_cast<E *>(Smem);
  E *Dos = Qs + Tile * Ld;
  E *Ks = Dos + Tile * Ld;
  E *Vs = Ks + Tile * Ld;
  E *Kt = Vs + Tile * Ld; // [DP][LdT]
  int Q0 = (gridDim.x - 1 - blockIdx.x) * Tile;
  int H = blockIdx.y, Bt = blockIdx.z, Hk = H / (P.Hq / P.Hkv);
  int Warp = threadIdx.x / 32, Lane = threadIdx.x % 32, G = Lane >> 2,
      C = Lane & 3;
  stage<E, DP>(Qs, nullptr,
               static_cast<const E *>(P.Q) + Bt * P.QS[0] + H * P.QS[1],
               P.QS[2], Q0, P.T, P.D);
  stage<E, DP>(Dos, nullptr,
               static_cast<const E *>(P.Do) + Bt * P.DoS[0] + H * P.DoS[1],
               P.DoS[2], Q0, P.T, P.D);
  const E *Kb = static_cast<const E *>(P.K) + Bt * P.KS[0] + Hk * P.KS[1];
  const E *Vb = static_cast<const E *>(P.V) + Bt * P.VS[0] + Hk * P.VS[1];
  int Row[2] = {Q0 + Warp * 16 + G, Q0 + Warp * 16 + G + 8};
  float Lse2[2], Delta[2];
#pragma unroll
  for (int R = 0; R < 2; ++R) {
    bool In = Row[R] < P.T;
    Lse2[R] = In ? P.Lse[Bt * P.LseS[0] + H * P.LseS[1] +
                         Row[R] * P.LseS[2]] * Log2e
                 : INFINITY;
    Delta[R] = In ? P.Delta[(int64_t(Bt) * P.Hq + H) * P.T + Row[R]] : 0;
  }
  float Dq[DP / 8][4] = {};
  float Scale2 = P.Scale * Log2e;
  int Tiles = keyTiles(P, Q0);
  for (int J = 0; J < Tiles; ++J) {
    int K0 = J * Tile;
    __syncthreads();
    stage<E, DP>(Ks, Kt, Kb, P.KS[2], K0, P.S, P.D);
    stage<E, DP>(Vs, nullptr, Vb, P.VS[2], K0, P.S, P.D);
    __syncthreads();
    float Sc[8][4] = {}, Dp[8][4] = {};
    timesTransposed<E, DP>(Sc, Qs, Warp * 16, Ks);
    timesTransposed<E, DP>(Dp, Dos, Warp * 16, Vs);
    // dS = P (dP - delta) scale
#pragma unroll
    for (int N = 0; N < 8; ++N)
#pragma unroll
      for (int X = 0; X < 4; ++X) {
        int Col = K0 + N * 8 + C * 2 + (X & 1), R = X >> 1;
        float Pv = exp2f(Sc[N][X] * Scale2 - Lse2[R]);
        if (Col >= P.S || (P.Causal && Col > Row[R]))
          Pv = 0;
        Sc[N][X] = Pv * (Dp[N][X] - Delta[R]) * P.Scale;
      }
    // dQ += dS K
    accumulate<E, DP>(Dq, Sc, Kt);
  }
  const float One[2] = {1, 1};
  storeRows<E, DP>(static_cast<E *>(P.Dq) + Bt * P.DqS[0] + H * P.DqS[1],
                   P.DqS[2], Q0 + Warp * 16, P.T, P.D, Dq, One);
}

//===----------------------------------------------------------------------===//
// Launch
//===----------------------------------------------------------------------===//

#define TRY_CUDA(Call)                                                         \
  do {                                                                         \
    if (cudaError_t E_ = (Call); E_ != cudaSuccess)                            \
      return std::string(#Call " failed: ") + cudaGetErrorString(E_);          \
  } while (0)

/// Shared bytes of each kernel: row-wise tiles of 64 x (DP + Pad) and
/// transposed ones of DP x (64 + Pad), plus the backward's row statistics.
template <int DP> constexpr int rowTile() { return Tile * (DP + Pad) * 2; }
template <int DP> constexpr int colTile() { return DP * LdT * 2; }

template <class E, int DP>
std::string launch(const FlashParams &P, bool Grad, cudaStream_t S) {
  constexpr int Forward = 2 * rowTile<DP>() + colTile<DP>();
  constexpr int Keys = 4 * rowTile<DP>() + 2 * colTile<DP>() + 2 * Tile * 4;
  constexpr int Queries = 4 * rowTile<DP>() + colTile<DP>();
  // Above 48 KiB a kernel must opt in; once per process and kernel.
  static bool OptedIn = false;
  if (!OptedIn) {
    TRY_CUDA(cudaFuncSetAttribute(flashForward<E, DP>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  Forward));
    TRY_CUDA(cudaFuncSetAttribute(flashBackwardKeys<E, DP>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  Keys));
    TRY_CUDA(cudaFuncSetAttribute(flashBackwardQueries<E, DP>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  Queries));
    OptedIn = true;
  }
  unsigned QTiles = unsigned((P.T + Tile - 1) / Tile),
           KTiles = unsigned((P.S + Tile - 1) / Tile);
  if (!Grad) {
    flashForward<E, DP><<<dim3(QTiles, unsigned(P.Hq), unsigned(P.B)),
                          Threads, Forward, S>>>(P);
    return "";
  }
  int64_t Rows = int64_t(P.B) * P.Hq * P.T;
  flashDelta<E><<<unsigned((Rows + 7) / 8), 256, 0, S>>>(P);
  flashBackwardKeys<E, DP><<<dim3(KTiles, unsigned(P.Hkv), unsigned(P.B)),
                             Threads, Keys, S>>>(P);
  flashBackwardQueries<E, DP><<<dim3(QTiles, unsigned(P.Hq), unsigned(P.B)),
                                Threads, Queries, S>>>(P);
  return "";
}

template <class E>
std::string launchFor(const FlashParams &P, bool Grad, cudaStream_t S) {
  if (P.D <= 16)
    return launch<E, 16>(P, Grad, S);
  if (P.D <= 32)
    return launch<E, 32>(P, Grad, S);
  if (P.D <= 64)
    return launch<E, 64>(P, Grad, S);
  return launch<E, 128>(P, Grad, S);
}

void strides3(const plan::TensorRef &R, int64_t Out[3]) {
  for (int I = 0; I < 3; ++I)
    Out[I] = R.Strides[size_t(I)];
}

} // namespace

std::string flashAttention(const plan::Kernel &K, const KernelOperands &Ops,
                           const KernelContext &C, cudaStream_t S) {
  bool Grad = K.Kind == KernelKind::AttentionGrad;
  const std::vector<int64_t> &I = K.Ints;
  FlashParams P{};
  P.B = int(I[0]);
  P.Hq = int(I[1]);
  P.Hkv = int(I[2]);
  P.T = int(I[3]);
  P.S = int(I[4]);
  P.D = int(I[5]);
  P.Causal = I[7] != 0;
  P.Scale = float(K.Floats[0]);
  if (P.Hkv <= 0 || P.Hq % P.Hkv || P.D > plan::FlashMaxHeadDim)
    return "flash attention of " + std::to_string(P.Hq) + " query heads, " +
           std::to_string(P.Hkv) + " key/value heads, head size " +
           std::to_string(P.D);
  if (!P.B || !P.Hq || !P.T || !P.S)
    return "";
  size_t Qi = Grad ? 1 : 0;
  P.Q = Ops.In[Qi];
  P.K = Ops.In[Qi + 1];
  P.V = Ops.In[Qi + 2];
  strides3(K.Inputs[Qi], P.QS);
  strides3(K.Inputs[Qi + 1], P.KS);
  strides3(K.Inputs[Qi + 2], P.VS);
  if (!Grad) {
    P.Out = Ops.Out[0];
    P.Lse = static_cast<float *>(Ops.Out[1]);
    strides3(K.Outputs[0], P.OutS);
    strides3(K.Outputs[1], P.LseS);
  } else {
    P.Do = Ops.In[0];
    P.O = Ops.In[4];
    P.Lse = static_cast<float *>(Ops.In[5]);
    strides3(K.Inputs[0], P.DoS);
    strides3(K.Inputs[4], P.OS);
    strides3(K.Inputs[5], P.LseS);
    P.Dq = Ops.Out[0];
    P.Dk = Ops.Out[1];
    P.Dv = Ops.Out[2];
    strides3(K.Outputs[0], P.DqS);
    strides3(K.Outputs[1], P.DkS);
    strides3(K.Outputs[2], P.DvS);
    uint64_t Need = plan::attentionWorkspace(K, elementBytes(Ops.InType[1]));
    if (Need > C.WorkspaceBytes)
      return "flash attention needs " + std::to_string(Need) +
             " bytes of workspace; the plan has " +
             std::to_string(C.WorkspaceBytes);
    P.Delta = static_cast<float *>(C.Workspace);
  }
  // The device's compute capability, once per process.
  static int Major = -1;
  if (Major < 0) {
    int Device = 0;
    TRY_CUDA(cudaGetDevice(&Device));
    TRY_CUDA(cudaDeviceGetAttribute(&Major, cudaDevAttrComputeCapabilityMajor,
                                    Device));
  }
  if (Major < 8)
    return "flash attention needs a GPU of compute capability 8.0 (Ampere) "
           "or newer; plan with dsc plan --math-attention";
  ElementType Act = Ops.InType[Qi];
  if (Act == ElementType::BF16)
    return launchFor<__nv_bfloat16>(P, Grad, S);
  if (Act == ElementType::F16)
    return launchFor<__half>(P, Grad, S);
  return "flash attention of fp32 operands";
}

} // namespace dsrun
