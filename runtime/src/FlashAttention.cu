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
//                   (per query head; with grouped queries each head's
//                   share in fp32, summed over the group in a fourth)
//   per query tile: P, dP = dO V^T, dS, dQ += dS K
// P is recomputed from the saved log-sum-exp in both passes.
//
// Tiles reach shared memory by cp.async, 16 bytes a copy, the next tile's
// while the current one is computed (two buffers of each streamed tile).
// They stay row-major with 8 elements of padding per row, so the eight
// row addresses of each ldmatrix hit distinct banks; ldmatrix's transposing
// form gives the B fragments of operands that are not k-contiguous (V in
// P V, dO in P^T dO, Q in dS^T Q, K in dS K) without a transposed copy.
//
//===----------------------------------------------------------------------===//

#include "FlashAttention.h"

#include "dsc/AttentionAlgorithms.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>

namespace plan = dsc::plan;
using plan::KernelKind;

namespace dsrun {

namespace {

constexpr int Tile = 64;  // rows of a block and of each staged tile
constexpr int Warps = 4;  // 16 rows each
constexpr int Threads = Warps * 32;
constexpr int Pad = 8;    // elements after each shared row
// Blocks an SM keeps at head size 64, where the tile loops wait on their
// own latency (Nsight Compute on GPT-2 XL's shapes: 0.5-1 eligible warps
// a scheduler): the register budget that fits them, at a few bytes of
// spill. Larger heads keep what the compiler picks. Sized for Hopper's
// 228 KiB of shared memory an SM; where less fits (an A100's 164 KiB
// holds three forward blocks), the cap costs its spill for nothing.
template <int DP> constexpr int forwardBlocks() { return DP == 64 ? 4 : 1; }
template <int DP> constexpr int keysBlocks() { return DP == 64 ? 3 : 1; }
template <int DP> constexpr int queriesBlocks() { return DP == 64 ? 4 : 1; }
constexpr float Log2e = 1.4426950408889634f, Ln2 = 0.6931471805599453f;

struct FlashParams {
  const void *Q, *K, *V, *O, *Do;
  void *Out, *Dq, *Dk, *Dv;
  float *Lse;   // through LseS
  float *Delta; // [B, Hq, T], dense
  // Grouped queries: dK and dV of each query head, [2][B][Hq][S][D] fp32,
  // summed per group by flashSumShares (null: one block per key/value
  // head writes them itself).
  float *Shares;
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

// ldmatrix and cp.async need sm_75 and sm_80; older targets trap as above.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define DSRUN_SM80(...) __trap();
#else
#define DSRUN_SM80(...) asm volatile(__VA_ARGS__);
#endif

__device__ __forceinline__ uint32_t sharedAddress(const void *P) {
  return uint32_t(__cvta_generic_to_shared(P));
}

/// Four 8 x 8 matrices of 16-bit elements from shared memory; lanes 8i to
/// 8i + 7 give the row addresses of matrix i, and register i of thread t
/// holds row t / 4, columns 2 (t % 4) and 2 (t % 4) + 1 of matrix i (of
/// its transpose with Trans).
template <bool Trans>
__device__ __forceinline__ void loadMatrices(uint32_t R[4], const void *P) {
  uint32_t A = sharedAddress(P);
  (void)A;
  if (Trans) {
    DSRUN_SM80("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 "
               "{%0,%1,%2,%3}, [%4];\n"
               : "=r"(R[0]), "=r"(R[1]), "=r"(R[2]), "=r"(R[3])
               : "r"(A))
  } else {
    DSRUN_SM80("ldmatrix.sync.aligned.m8n8.x4.shared.b16 "
               "{%0,%1,%2,%3}, [%4];\n"
               : "=r"(R[0]), "=r"(R[1]), "=r"(R[2]), "=r"(R[3])
               : "r"(A))
  }
}

/// The A fragment (16 x 16) at (Row0, K0) of a row-major shared tile of
/// Ld elements per row: thread (g, c) = (lane / 4, lane % 4) holds rows g
/// and g + 8, columns 2c, 2c + 1 and 2c + 8, 2c + 9.
template <int Ld, class E>
__device__ __forceinline__ void loadA(uint32_t A[4], const E *Tile_, int Row0,
                                      int K0) {
  int L = threadIdx.x % 32;
  loadMatrices<false>(
      A, Tile_ + (Row0 + (L & 7) + (L >> 3 & 1) * 8) * Ld + K0 + (L >> 4) * 8);
}

/// The B fragments (16 x 8, k x n) of the n-blocks N0 and N0 + 8 at K0
/// (B[0], B[1] and B[2], B[3]) of a product whose B^T is the shared tile
/// (n rows, k contiguous).
template <int Ld, class E>
__device__ __forceinline__ void loadBTransposed(uint32_t B[4], const E *Tile_,
                                                int N0, int K0) {
  int L = threadIdx.x % 32;
  loadMatrices<false>(
      B, Tile_ + (N0 + (L & 7) + (L >> 4) * 8) * Ld + K0 + (L >> 3 & 1) * 8);
}

/// The same fragments where B itself is the shared tile (k rows, n
/// contiguous): ldmatrix transposes on the way.
template <int Ld, class E>
__device__ __forceinline__ void loadB(uint32_t B[4], const E *Tile_, int K0,
                                      int N0) {
  int L = threadIdx.x % 32;
  loadMatrices<true>(
      B, Tile_ + (K0 + (L & 7) + (L >> 3 & 1) * 8) * Ld + N0 + (L >> 4) * 8);
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
    for (int N = 0; N < 8; N += 2) {
      uint32_t B[4];
      loadBTransposed<Ld>(B, Y, N * 8, Kk * 16);
      Mma<E>::run(S[N], A, B[0], B[1]);
      Mma<E>::run(S[N + 1], A, B[2], B[3]);
    }
  }
}

/// Values: O (16 x DP) += P (16 x 64, as a product leaves it) times the
/// row-major shared tile Y (64 rows of DP).
template <class E, int DP>
__device__ __forceinline__ void accumulate(float (&O)[DP / 8][4],
                                           const float (&P)[8][4],
                                           const E *Y) {
  constexpr int Ld = DP + Pad;
#pragma unroll
  for (int Kk = 0; Kk < Tile / 16; ++Kk) {
    uint32_t A[4];
    accumulatorAsA<E>(A, P, Kk);
#pragma unroll
    for (int N = 0; N < DP / 8; N += 2) {
      uint32_t B[4];
      loadB<Ld>(B, Y, Kk * 16, N * 8);
      Mma<E>::run(O[N], A, B[0], B[1]);
      Mma<E>::run(O[N + 1], A, B[2], B[3]);
    }
  }
}

/// Starts copying rows [Row0, Row0 + 64) of a [Rows, D] view (row stride
/// RowStride) into a shared tile [64][DP + Pad], 16 bytes per copy, zeros
/// beyond Rows and D. The copies land by waitCopies().
template <class E, int DP>
__device__ __forceinline__ void stage(E *Dst, const E *Base, int64_t RowStride,
                                      int Row0, int Rows, int D) {
  constexpr int Chunks = DP / 8, Ld = DP + Pad;
#pragma unroll
  for (int I = threadIdx.x; I < Tile * Chunks; I += Threads) {
    int R = I / Chunks, C = I % Chunks;
    bool In = Row0 + R < Rows && C * 8 < D;
    const E *Src = In ? Base + int64_t(Row0 + R) * RowStride + C * 8 : Base;
    uint32_t To = sharedAddress(Dst + R * Ld + C * 8);
    int Bytes = In ? 16 : 0;
    (void)To, (void)Src, (void)Bytes;
    DSRUN_SM80("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(To),
               "l"(Src), "r"(Bytes))
  }
}

/// Closes the copies started since the last call into one group.
__device__ __forceinline__ void commitCopies() {
  DSRUN_SM80("cp.async.commit_group;\n" ::)
}

/// Waits for every group but the Pending latest ones.
template <int Pending> __device__ __forceinline__ void waitCopies() {
  DSRUN_SM80("cp.async.wait_group %0;\n" ::"n"(Pending))
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
//
// Each key tile's K and V are copied while the tile before is computed
// (two buffers each).

template <class E, int DP>
__global__ void __launch_bounds__(Threads, forwardBlocks<DP>())
    flashForward(const __grid_constant__ FlashParams P) {
  constexpr int Ld = DP + Pad, TileElems = Tile * Ld;
  extern __shared__ __align__(16) unsigned char Smem[];
  E *Qs = reinterpret_cast<E *>(Smem);
  E *Ks = Qs + TileElems;       // [2][64][Ld]
  E *Vs = Ks + 2 * TileElems;   // [2][64][Ld]
  // The longest causal rows first, so the short ones fill the tail.
  int Q0 = (gridDim.x - 1 - blockIdx.x) * Tile;
  int H = blockIdx.y, Bt = blockIdx.z, Hk = H / (P.Hq / P.Hkv);
  int Warp = threadIdx.x / 32, Lane = threadIdx.x % 32, G = Lane >> 2,
      C = Lane & 3;
  const E *Qb = static_cast<const E *>(P.Q) + Bt * P.QS[0] + H * P.QS[1];
  const E *Kb = static_cast<const E *>(P.K) + Bt * P.KS[0] + Hk * P.KS[1];
  const E *Vb = static_cast<const E *>(P.V) + Bt * P.VS[0] + Hk * P.VS[1];
  int Tiles = keyTiles(P, Q0);
  stage<E, DP>(Qs, Qb, P.QS[2], Q0, P.T, P.D);
  stage<E, DP>(Ks, Kb, P.KS[2], 0, P.S, P.D);
  stage<E, DP>(Vs, Vb, P.VS[2], 0, P.S, P.D);
  commitCopies();

  uint32_t Qa[DP / 16][4];
  float O[DP / 8][4] = {};
  float M[2] = {-INFINITY, -INFINITY}, L[2] = {0, 0};
  float Scale2 = P.Scale * Log2e;
  int Row[2] = {Q0 + Warp * 16 + G, Q0 + Warp * 16 + G + 8};
  for (int J = 0; J < Tiles; ++J) {
    int K0 = J * Tile;
    if (J + 1 < Tiles) {
      int Next = (J + 1) & 1;
      stage<E, DP>(Ks + Next * TileElems, Kb, P.KS[2], K0 + Tile, P.S, P.D);
      stage<E, DP>(Vs + Next * TileElems, Vb, P.VS[2], K0 + Tile, P.S, P.D);
    }
    commitCopies();
    waitCopies<1>();
    __syncthreads();
    if (J == 0)
#pragma unroll
      for (int Kk = 0; Kk < DP / 16; ++Kk)
        loadA<Ld>(Qa[Kk], Qs, Warp * 16, Kk * 16);
    const E *Kt = Ks + (J & 1) * TileElems, *Vt = Vs + (J & 1) * TileElems;
    float Sc[8][4] = {};
#pragma unroll
    for (int Kk = 0; Kk < DP / 16; ++Kk)
#pragma unroll
      for (int N = 0; N < 8; N += 2) {
        uint32_t B[4];
        loadBTransposed<Ld>(B, Kt, N * 8, Kk * 16);
        Mma<E>::run(Sc[N], Qa[Kk], B[0], B[1]);
        Mma<E>::run(Sc[N + 1], Qa[Kk], B[2], B[3]);
      }
    // Only the tiles the diagonal or the sequence's end cut need a mask.
    bool Masked = K0 + Tile > P.S || (P.Causal && K0 + Tile - 1 > Q0);
    float Mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int N = 0; N < 8; ++N)
#pragma unroll
      for (int X = 0; X < 4; ++X) {
        float V = Sc[N][X] * Scale2;
        if (Masked) {
          int Col = K0 + N * 8 + C * 2 + (X & 1);
          if (Col >= P.S || (P.Causal && Col > Row[X >> 1]))
            V = -INFINITY;
        }
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
    // The buffers of this tile are the next-but-one tile's.
    __syncthreads();
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

/// dK and dV of one tile of 64 keys, from one query head (grouped
/// queries: its share, summed after) or from the one head of its
/// key/value head. The query tiles stream through two buffers.
template <class E, int DP>
__global__ void __launch_bounds__(Threads, keysBlocks<DP>())
    flashBackwardKeys(const __grid_constant__ FlashParams P) {
  constexpr int Ld = DP + Pad, TileElems = Tile * Ld;
  extern __shared__ __align__(16) unsigned char Smem[];
  E *Ks = reinterpret_cast<E *>(Smem);
  E *Vs = Ks + TileElems;
  E *Qs = Vs + TileElems;      // [2][64][Ld]
  E *Dos = Qs + 2 * TileElems; // [2][64][Ld]
  float *Lse2 = reinterpret_cast<float *>(Dos + 2 * TileElems); // [2][64]
  float *Delta = Lse2 + 2 * Tile;                               // [2][64]
  // Low key tiles see the most queries under a causal mask: first.
  int K0 = blockIdx.x * Tile;
  int H = blockIdx.y, Bt = blockIdx.z, Hk = H / (P.Hq / P.Hkv);
  int Warp = threadIdx.x / 32, Lane = threadIdx.x % 32, G = Lane >> 2,
      C = Lane & 3;
  int QTiles = (P.T + Tile - 1) / Tile;
  int First = P.Causal ? K0 / Tile : 0;
  int Steps = max(QTiles - First, 0);
  // Step S: query tile First + S.
  auto Issue = [&](int Step, int Buf) {
    int Q0 = (First + Step) * Tile;
    stage<E, DP>(Qs + Buf * TileElems,
                 static_cast<const E *>(P.Q) + Bt * P.QS[0] + H * P.QS[1],
                 P.QS[2], Q0, P.T, P.D);
    stage<E, DP>(Dos + Buf * TileElems,
                 static_cast<const E *>(P.Do) + Bt * P.DoS[0] + H * P.DoS[1],
                 P.DoS[2], Q0, P.T, P.D);
    for (int R = threadIdx.x; R < Tile; R += Threads) {
      bool In = Q0 + R < P.T;
      Lse2[Buf * Tile + R] =
          In ? P.Lse[Bt * P.LseS[0] + H * P.LseS[1] + (Q0 + R) * P.LseS[2]] *
                   Log2e
             : INFINITY;
      Delta[Buf * Tile + R] =
          In ? P.Delta[(int64_t(Bt) * P.Hq + H) * P.T + Q0 + R] : 0;
    }
  };
  stage<E, DP>(Ks, static_cast<const E *>(P.K) + Bt * P.KS[0] + Hk * P.KS[1],
               P.KS[2], K0, P.S, P.D);
  stage<E, DP>(Vs, static_cast<const E *>(P.V) + Bt * P.VS[0] + Hk * P.VS[1],
               P.VS[2], K0, P.S, P.D);
  if (Steps)
    Issue(0, 0);
  commitCopies();
  float Dk[DP / 8][4] = {}, Dv[DP / 8][4] = {};
  float Scale2 = P.Scale * Log2e;
  int Key[2] = {K0 + Warp * 16 + G, K0 + Warp * 16 + G + 8};
  for (int Step = 0; Step < Steps; ++Step) {
    if (Step + 1 < Steps)
      Issue(Step + 1, (Step + 1) & 1);
    commitCopies();
    waitCopies<1>();
    __syncthreads();
    int Buf = Step & 1, Q0 = (First + Step) * Tile;
    const E *Qt = Qs + Buf * TileElems, *Dot = Dos + Buf * TileElems;
    const float *L2 = Lse2 + Buf * Tile, *Dl = Delta + Buf * Tile;
    // S^T = K Q^T, then P^T, for the warp's 16 keys x 64 queries.
    float St[8][4] = {};
    timesTransposed<E, DP>(St, Ks, Warp * 16, Qt);
    bool Masked = K0 + Tile > P.S || (P.Causal && K0 + Tile - 1 > Q0);
#pragma unroll
    for (int N = 0; N < 8; ++N)
#pragma unroll
      for (int X = 0; X < 4; ++X) {
        int Qi = N * 8 + C * 2 + (X & 1), K = Key[X >> 1];
        float Pv = exp2f(St[N][X] * Scale2 - L2[Qi]);
        if (Masked && (K >= P.S || (P.Causal && K > Q0 + Qi)))
          Pv = 0;
        St[N][X] = Pv;
      }
    // dV += P^T dO
    accumulate<E, DP>(Dv, St, Dot);
    // dP^T = V dO^T
    float Dp[8][4] = {};
    timesTransposed<E, DP>(Dp, Vs, Warp * 16, Dot);
    // dS^T = P^T (dP^T - delta) scale; dK += dS^T Q
#pragma unroll
    for (int N = 0; N < 8; ++N)
#pragma unroll
      for (int X = 0; X < 4; ++X)
        St[N][X] *= (Dp[N][X] - Dl[N * 8 + C * 2 + (X & 1)]) * P.Scale;
    accumulate<E, DP>(Dk, St, Qt);
    __syncthreads();
  }
  if (P.Shares) {
    // This head's share, fp32 [2][B][Hq][S][D].
    int64_t Head = (int64_t(Bt) * P.Hq + H) * P.S;
    int64_t Half = int64_t(P.B) * P.Hq * P.S * P.D;
#pragma unroll
    for (int R = 0; R < 2; ++R) {
      int Key = K0 + Warp * 16 + G + 8 * R;
      if (Key >= P.S)
        continue;
      float *ShareK = P.Shares + (Head + Key) * P.D, *ShareV = ShareK + Half;
#pragma unroll
      for (int N = 0; N < DP / 8; ++N) {
        int Col = N * 8 + C * 2;
        if (Col < P.D) {
          *reinterpret_cast<float2 *>(ShareK + Col) =
              make_float2(Dk[N][2 * R], Dk[N][2 * R + 1]);
          *reinterpret_cast<float2 *>(ShareV + Col) =
              make_float2(Dv[N][2 * R], Dv[N][2 * R + 1]);
        }
      }
    }
    return;
  }
  const float One[2] = {1, 1};
  storeRows<E, DP>(static_cast<E *>(P.Dk) + Bt * P.DkS[0] + Hk * P.DkS[1],
                   P.DkS[2], K0 + Warp * 16, P.S, P.D, Dk, One);
  storeRows<E, DP>(static_cast<E *>(P.Dv) + Bt * P.DvS[0] + Hk * P.DvS[1],
                   P.DvS[2], K0 + Warp * 16, P.S, P.D, Dv, One);
}

/// dK and dV of grouped queries: each key/value head's sum of its query
/// heads' shares, in head order (the result does not depend on
/// scheduling). Two elements a thread.
template <class E>
__global__ void flashSumShares(const __grid_constant__ FlashParams P) {
  int Group = P.Hq / P.Hkv;
  int64_t Pairs = int64_t(P.B) * P.Hkv * P.S * P.D / 2;
  int64_t Half = int64_t(P.B) * P.Hq * P.S * P.D;
  for (int64_t I = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; I < Pairs;
       I += int64_t(gridDim.x) * blockDim.x) {
    int64_t E2 = I * 2;
    int D = int(E2 % P.D);
    int64_t Row = E2 / P.D;
    int Key = int(Row % P.S);
    int Hk = int(Row / P.S % P.Hkv), Bt = int(Row / P.S / P.Hkv);
    const float *Share =
        P.Shares + ((int64_t(Bt) * P.Hq + int64_t(Hk) * Group) * P.S + Key) *
                       P.D + D;
    float2 Dk = {0, 0}, Dv = {0, 0};
    for (int G = 0; G < Group; ++G) {
      float2 K = *reinterpret_cast<const float2 *>(Share);
      float2 V = *reinterpret_cast<const float2 *>(Share + Half);
      Dk.x += K.x, Dk.y += K.y, Dv.x += V.x, Dv.y += V.y;
      Share += int64_t(P.S) * P.D;
    }
    E *OutK = static_cast<E *>(P.Dk) + Bt * P.DkS[0] + Hk * P.DkS[1] +
              Key * P.DkS[2] + D;
    E *OutV = static_cast<E *>(P.Dv) + Bt * P.DvS[0] + Hk * P.DvS[1] +
              Key * P.DvS[2] + D;
    *reinterpret_cast<uint32_t *>(OutK) = Mma<E>::pack(Dk.x, Dk.y);
    *reinterpret_cast<uint32_t *>(OutV) = Mma<E>::pack(Dv.x, Dv.y);
  }
}

/// dQ of one tile of 64 queries of one query head; key tiles stream
/// through two buffers.
template <class E, int DP>
__global__ void __launch_bounds__(Threads, queriesBlocks<DP>())
    flashBackwardQueries(const __grid_constant__ FlashParams P) {
  constexpr int Ld = DP + Pad, TileElems = Tile * Ld;
  extern __shared__ __align__(16) unsigned char Smem[];
  E *Qs = reinterpret_cast<E *>(Smem);
  E *Dos = Qs + TileElems;
  E *Ks = Dos + TileElems;    // [2][64][Ld]
  E *Vs = Ks + 2 * TileElems; // [2][64][Ld]
  int Q0 = (gridDim.x - 1 - blockIdx.x) * Tile;
  int H = blockIdx.y, Bt = blockIdx.z, Hk = H / (P.Hq / P.Hkv);
  int Warp = threadIdx.x / 32, Lane = threadIdx.x % 32, G = Lane >> 2,
      C = Lane & 3;
  const E *Kb = static_cast<const E *>(P.K) + Bt * P.KS[0] + Hk * P.KS[1];
  const E *Vb = static_cast<const E *>(P.V) + Bt * P.VS[0] + Hk * P.VS[1];
  int Tiles = keyTiles(P, Q0);
  stage<E, DP>(Qs, static_cast<const E *>(P.Q) + Bt * P.QS[0] + H * P.QS[1],
               P.QS[2], Q0, P.T, P.D);
  stage<E, DP>(Dos, static_cast<const E *>(P.Do) + Bt * P.DoS[0] + H * P.DoS[1],
               P.DoS[2], Q0, P.T, P.D);
  stage<E, DP>(Ks, Kb, P.KS[2], 0, P.S, P.D);
  stage<E, DP>(Vs, Vb, P.VS[2], 0, P.S, P.D);
  commitCopies();
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
  for (int J = 0; J < Tiles; ++J) {
    int K0 = J * Tile;
    if (J + 1 < Tiles) {
      int Next = (J + 1) & 1;
      stage<E, DP>(Ks + Next * TileElems, Kb, P.KS[2], K0 + Tile, P.S, P.D);
      stage<E, DP>(Vs + Next * TileElems, Vb, P.VS[2], K0 + Tile, P.S, P.D);
    }
    commitCopies();
    waitCopies<1>();
    __syncthreads();
    const E *Kt = Ks + (J & 1) * TileElems, *Vt = Vs + (J & 1) * TileElems;
    float Sc[8][4] = {}, Dp[8][4] = {};
    timesTransposed<E, DP>(Sc, Qs, Warp * 16, Kt);
    timesTransposed<E, DP>(Dp, Dos, Warp * 16, Vt);
    bool Masked = K0 + Tile > P.S || (P.Causal && K0 + Tile - 1 > Q0);
    // dS = P (dP - delta) scale
#pragma unroll
    for (int N = 0; N < 8; ++N)
#pragma unroll
      for (int X = 0; X < 4; ++X) {
        int Col = K0 + N * 8 + C * 2 + (X & 1), R = X >> 1;
        float Pv = exp2f(Sc[N][X] * Scale2 - Lse2[R]);
        if (Masked && (Col >= P.S || (P.Causal && Col > Row[R])))
          Pv = 0;
        Sc[N][X] = Pv * (Dp[N][X] - Delta[R]) * P.Scale;
      }
    // dQ += dS K
    accumulate<E, DP>(Dq, Sc, Kt);
    __syncthreads();
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

/// Shared bytes of each kernel: row-major tiles of 64 x (DP + Pad), the
/// streamed ones twice, plus the keys pass's row statistics (twice).
template <int DP> constexpr int rowTile() { return Tile * (DP + Pad) * 2; }

template <class E, int DP>
std::string launch(const FlashParams &P, bool Grad, cudaStream_t S) {
  constexpr int Forward = 5 * rowTile<DP>();
  constexpr int Keys = 6 * rowTile<DP>() + 4 * Tile * 4;
  constexpr int Queries = 6 * rowTile<DP>();
  // Above 48 KiB a kernel must opt in; once per process and kernel. The
  // carveout asks for the most shared memory, so that as many blocks fit
  // as the registers allow (the tiles bypass L1: cp.async.cg).
  static bool OptedIn = false;
  if (!OptedIn) {
    auto OptIn = [](auto Kernel, int Bytes) -> std::string {
      TRY_CUDA(cudaFuncSetAttribute(
          Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Bytes));
      TRY_CUDA(cudaFuncSetAttribute(
          Kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
          int(cudaSharedmemCarveoutMaxShared)));
      return "";
    };
    for (std::string Problem : {OptIn(flashForward<E, DP>, Forward),
                                OptIn(flashBackwardKeys<E, DP>, Keys),
                                OptIn(flashBackwardQueries<E, DP>, Queries)})
      if (!Problem.empty())
        return Problem;
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
  // Grouped queries: a block per query head, its share summed after.
  flashBackwardKeys<E, DP>
      <<<dim3(KTiles, unsigned(P.Shares ? P.Hq : P.Hkv), unsigned(P.B)),
         Threads, Keys, S>>>(P);
  if (P.Shares) {
    int64_t Pairs = int64_t(P.B) * P.Hkv * P.S * P.D / 2;
    flashSumShares<E><<<unsigned(std::min<int64_t>((Pairs + 255) / 256,
                                                   int64_t(1) << 20)),
                        256, 0, S>>>(P);
  }
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
  bool Grad = K.kind() == KernelKind::AttentionGrad;
  const plan::AttentionAttrs &A = *K.as<plan::AttentionAttrs>();
  FlashParams P{};
  P.B = int(A.Batch);
  P.Hq = int(A.QHeads);
  P.Hkv = int(A.KVHeads);
  P.T = int(A.QLen);
  P.S = int(A.KVLen);
  P.D = int(A.HeadDim);
  P.Causal = A.Causal;
  P.Scale = float(A.Scale);
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
    uint64_t Need =
        plan::attentionWorkspace(A, Grad, elementBytes(Ops.InType[1]));
    if (Need > C.WorkspaceBytes)
      return "flash attention needs " + std::to_string(Need) +
             " bytes of workspace; the plan has " +
             std::to_string(C.WorkspaceBytes) +
             " (a plan from an older dsc? plan again)";
    P.Delta = static_cast<float *>(C.Workspace);
    if (P.Hkv < P.Hq)
      P.Shares = reinterpret_cast<float *>(static_cast<char *>(C.Workspace) +
                                           plan::attentionDeltaBytes(A));
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
           "or newer; plan with dsc plan --attention math";
  ElementType Act = Ops.InType[Qi];
  if (Act == ElementType::BF16)
    return launchFor<__nv_bfloat16>(P, Grad, S);
  if (Act == ElementType::F16)
    return launchFor<__half>(P, Grad, S);
  return "flash attention of fp32 operands";
}

} // namespace dsrun
