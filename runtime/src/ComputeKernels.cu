//===- ComputeKernels.cu - The compute program's kernels ------------------===//
//
// Correct first: every kind computes in fp32 and reads and writes its
// operands through their strides and types. Attention the plan marks as
// flash runs in FlashAttention.cu; the rest takes the "math" path here
// (scores and probabilities in the kernel workspace, one batch at a time,
// products by cuBLAS); a norm's weight gradients are a column sum per
// thread; an embedding's gradient sorts its token ids (stable, so the sums
// are deterministic). docs/runtime.md says what each costs.
//
//===----------------------------------------------------------------------===//

#include "ComputeKernels.h"
#include "FastDivmod.h"
#include "FlashAttention.h"

#include "dsc/ColumnSums.h"
#include "dsc/FlashAttention.h"
#include "dsc/Pointwise.h"
#include "dsc/Random.h"

#include <cub/cub.cuh>

#include <algorithm>

namespace plan = dsc::plan;
using plan::KernelKind;
using plan::PointwiseOp;

namespace dsrun {

namespace {

constexpr int MaxRank = 8;
constexpr int Threads = 256;

unsigned blocksFor(uint64_t N) {
  return unsigned(std::min<uint64_t>((N + Threads - 1) / Threads, 65535 * 8));
}

/// An operand as a kernel sees it.
struct Strided {
  void *Ptr = nullptr;
  ElementType Type = ElementType::F32;
  int Rank = 0;
  int64_t Shape[MaxRank] = {}, Strides[MaxRank] = {};
};

Strided strided(const plan::TensorRef &R, void *Ptr, ElementType T) {
  Strided S;
  S.Ptr = Ptr;
  S.Type = T;
  S.Rank = int(R.Shape.size());
  for (int K = 0; K < S.Rank && K < MaxRank; ++K) {
    S.Shape[K] = R.Shape[K];
    S.Strides[K] = R.Strides[K];
  }
  return S;
}

int64_t numel(const std::vector<int64_t> &S) {
  int64_t N = 1;
  for (int64_t D : S)
    N *= D;
  return N;
}

//===----------------------------------------------------------------------===//
// Block reductions
//===----------------------------------------------------------------------===//

__device__ float warpSum(float V) {
  for (int O = 16; O > 0; O /= 2)
    V += __shfl_xor_sync(0xffffffffu, V, O);
  return V;
}
__device__ float warpMax(float V) {
  for (int O = 16; O > 0; O /= 2)
    V = fmaxf(V, __shfl_xor_sync(0xffffffffu, V, O));
  return V;
}
/// The sum (or max) over the block, returned to every thread.
__device__ float blockReduce(float V, bool Max) {
  __shared__ float Partial[32];
  __shared__ float Result;
  V = Max ? warpMax(V) : warpSum(V);
  int Lane = threadIdx.x % 32, Warp = threadIdx.x / 32;
  if (Lane == 0)
    Partial[Warp] = V;
  __syncthreads();
  if (Warp == 0) {
    int Warps = (blockDim.x + 31) / 32;
    float X = Lane < Warps ? Partial[Lane] : (Max ? -INFINITY : 0.0f);
    X = Max ? warpMax(X) : warpSum(X);
    if (Lane == 0)
      Result = X;
  }
  __syncthreads();
  float R = Result;
  __syncthreads();
  return R;
}

//===----------------------------------------------------------------------===//
// 16-bit values eight at a time (16 bytes per load)
//===----------------------------------------------------------------------===//

constexpr int VecElems = 8, MaxVecCols = 1024 * VecElems;

template <ElementType T> __device__ __forceinline__ float from16(uint16_t H) {
  return T == ElementType::BF16 ? fromBF16(H) : fromFP16(H);
}
template <ElementType T> __device__ __forceinline__ uint16_t to16(float V) {
  return T == ElementType::BF16 ? toBF16(V) : toFP16(V);
}

template <ElementType T>
__device__ __forceinline__ void load8(float (&V)[VecElems], const void *Base,
                                      uint64_t At) {
  uint4 Raw = *reinterpret_cast<const uint4 *>(
      static_cast<const uint16_t *>(Base) + At);
  const uint16_t *H = reinterpret_cast<const uint16_t *>(&Raw);
#pragma unroll
  for (int I = 0; I < VecElems; ++I)
    V[I] = from16<T>(H[I]);
}
template <ElementType T>
__device__ __forceinline__ void store8(void *Base, uint64_t At,
                                       const float (&V)[VecElems]) {
  uint4 Raw;
  uint16_t *H = reinterpret_cast<uint16_t *>(&Raw);
#pragma unroll
  for (int I = 0; I < VecElems; ++I)
    H[I] = to16<T>(V[I]);
  *reinterpret_cast<uint4 *>(static_cast<uint16_t *>(Base) + At) = Raw;
}

//===----------------------------------------------------------------------===//
// Pointwise programs
//===----------------------------------------------------------------------===//

using dsc::pointwise::MaxConstants;
using dsc::pointwise::MaxInstructions;
using dsc::pointwise::MaxRegisters;
static_assert(dsc::pointwise::MaxInputs == 8 && dsc::pointwise::MaxOutputs == 4,
              "PointwiseArgs holds 8 inputs and 4 outputs");

struct PointwiseArgs {
  Strided In[8], Out[4];
  /// Set when every operand's offset is (E / Div) % Period for output
  /// element E (a dense operand, or one broadcast along leading or
  /// trailing dims): no per-dim index arithmetic.
  bool Flat = false;
  int64_t InDiv[8] = {}, InPeriod[8] = {}, OutDiv[4] = {}, OutPeriod[4] = {};
  /// Otherwise, when every offset fits 31 bits (narrowDims): the dims
  /// (size-1 dims dropped, neighbours every operand steps over as one
  /// merged) and each operand's strides along them, outermost first.
  int Rank = 0;
  FastDivmod Dim[MaxRank];
  uint32_t InStride[8][MaxRank] = {}, OutStride[4][MaxRank] = {};
  int NumIn = 0, NumOut = 0, Instructions = 0;
  int16_t Code[MaxInstructions][5] = {};
  int OutReg[4] = {};
  float Constants[MaxConstants] = {};
  uint64_t Seed = 0;
  /// Evaluation: dropout keeps every element, unscaled.
  bool Inference = false;
  int64_t N = 0;
};

/// A program's registers indexed by the program: in local memory.
struct LocalRegisters {
  static constexpr int Size = MaxRegisters;
  float V[MaxRegisters];
  __device__ __forceinline__ float get(int I) const { return V[I]; }
  __device__ __forceinline__ void set(int I, float X) { V[I] = X; }
};

/// Registers of a short program (at most N), reached through selects on
/// constant indices so that they stay in the thread's registers: a load
/// stored into local memory stalls the thread until it returns, which
/// kept one load in flight per thread and the kernels at a fifth of the
/// memory's speed.
template <int N> struct SelectRegisters {
  static constexpr int Size = N;
  float V[N];
  __device__ __forceinline__ float get(int I) const {
    float X = V[0];
#pragma unroll
    for (int K = 1; K < N; ++K)
      X = I == K ? V[K] : X;
    return X;
  }
  __device__ __forceinline__ void set(int I, float X) {
#pragma unroll
    for (int K = 0; K < N; ++K)
      V[K] = I == K ? X : V[K];
  }
};

/// Runs the program of element E over its registers R (the inputs loaded
/// into the first ones).
template <typename Registers>
__device__ __forceinline__ void runProgram(const PointwiseArgs &A, int64_t E,
                                           Registers &R) {
  for (int K = 0; K < A.Instructions; ++K) {
    const int16_t *X = A.Code[K];
    PointwiseOp Op = PointwiseOp(X[0]);
    float V;
    if (Op == PointwiseOp::Const) {
      V = A.Constants[X[2]];
    } else if (Op == PointwiseOp::Dropout) {
      float Ratio = A.Constants[X[3]];
      V = A.Inference ? R.get(X[2])
          : dsc::dropoutKeeps(A.Seed, uint64_t(X[4]), uint64_t(E), Ratio)
              ? R.get(X[2]) / (1.0f - Ratio)
              : 0.0f;
    } else {
      float Args[3] = {R.get(X[2]), R.get(X[3]), R.get(X[4])};
      V = dsc::pointwise::apply(Op, Args);
    }
    R.set(X[1], V);
  }
}

/// Runs the program over the registers of Batch elements (the first E),
/// each instruction decoded once for all of them and its op dispatched
/// once: inside each case the op is a constant, so the arithmetic is
/// straight-line code. Decoding and dispatching per element made a
/// six-instruction program run at a tenth of the memory's speed.
template <int Batch, typename Registers>
__device__ __forceinline__ void runProgramBatch(const PointwiseArgs &A,
                                                int64_t E,
                                                int64_t Spacing,
                                                Registers (&R)[Batch]) {
  using P = PointwiseOp;
  for (int K = 0; K < A.Instructions; ++K) {
    const int16_t *X = A.Code[K];
    P Op = P(X[0]);
    int Dst = X[1];
    float Out[Batch];
    if (Op == P::Const) {
#pragma unroll
      for (int B = 0; B < Batch; ++B)
        Out[B] = A.Constants[X[2]];
    } else if (Op == P::Dropout) {
      float Ratio = A.Constants[X[3]];
#pragma unroll
      for (int B = 0; B < Batch; ++B) {
        float V = R[B].get(X[2]);
        Out[B] = A.Inference ? V
                 : dsc::dropoutKeeps(A.Seed, uint64_t(X[4]),
                                     uint64_t(E + B * Spacing), Ratio)
                     ? V / (1.0f - Ratio)
                     : 0.0f;
      }
    } else {
      float Args[Batch][3];
#pragma unroll
      for (int B = 0; B < Batch; ++B) {
        Args[B][0] = R[B].get(X[2]);
        Args[B][1] = R[B].get(X[3]);
        Args[B][2] = R[B].get(X[4]);
      }
      switch (Op) {
#define DSRUN_POINTWISE_CASE(V, N)                                             \
  case P::V:                                                                   \
    _Pragma("unroll") for (int B = 0; B < Batch; ++B) Out[B] =                 \
        dsc::pointwise::apply(P::V, Args[B]);                                  \
    break;
        DSC_PLAN_POINTWISEOP(DSRUN_POINTWISE_CASE)
#undef DSRUN_POINTWISE_CASE
      }
    }
#pragma unroll
    for (int B = 0; B < Batch; ++B)
      R[B].set(Dst, Out[B]);
  }
}

/// Runs the program on output element E, whose operands sit at InOff and
/// OutOff.
__device__ __forceinline__ void pointwiseElement(const PointwiseArgs &A,
                                                 int64_t E,
                                                 const int64_t *InOff,
                                                 const int64_t *OutOff) {
  LocalRegisters R;
#pragma unroll
  for (int J = 0; J < 8; ++J)
    if (J < A.NumIn)
      R.V[J] = loadAs(A.In[J].Ptr, uint64_t(InOff[J]), A.In[J].Type);
  runProgram(A, E, R);
#pragma unroll
  for (int J = 0; J < 4; ++J)
    if (J < A.NumOut)
      storeAs(A.Out[J].Ptr, uint64_t(OutOff[J]), A.Out[J].Type,
              R.V[A.OutReg[J]]);
}

/// Whether an operand of offset (E / Div) % Period is laid out as the N
/// output elements themselves.
__host__ __device__ __forceinline__ bool dense(int64_t Div, int64_t Period,
                                               int64_t N) {
  return Div == 1 && Period == N;
}

/// (E / Div) % Period in the index type: 32-bit division costs a fraction
/// of 64-bit, and most tensors have fewer than 2^31 elements.
template <typename Index>
__device__ __forceinline__ int64_t flatOffset(Index E, int64_t Div,
                                              int64_t Period, int64_t N) {
  if (dense(Div, Period, N))
    return int64_t(E);
  return int64_t((E / Index(Div)) % Index(Period));
}

/// Elements each thread of the flat kernel runs at once: their loads are
/// issued together, so a thread has several in flight.
constexpr int FlatBatch = 4;

// The argument structs are __grid_constant__: indexed with a value known
// only at run time (an operand J, a program's register), a plain kernel
// parameter is copied to every thread's local memory first, which made
// these kernels 10x slower than the memory they move.
template <typename Index, typename Registers>
__global__ void pointwiseFlatKernel(const __grid_constant__ PointwiseArgs A) {
  Index Stride = Index(gridDim.x) * blockDim.x * FlatBatch;
  for (Index First = Index(blockIdx.x) * blockDim.x * FlatBatch + threadIdx.x;
       First < Index(A.N); First += Stride) {
    Registers R[FlatBatch];
#pragma unroll
    for (int B = 0; B < FlatBatch; ++B) {
      Index E = First + Index(B) * blockDim.x;
#pragma unroll
      for (int J = 0; J < (Registers::Size < 8 ? Registers::Size : 8); ++J)
        if (J < A.NumIn && E < Index(A.N))
          R[B].V[J] = loadAs(
              A.In[J].Ptr,
              uint64_t(flatOffset<Index>(E, A.InDiv[J], A.InPeriod[J], A.N)),
              A.In[J].Type);
    }
    // Lanes past the end compute on unloaded registers and store nothing.
    runProgramBatch<FlatBatch>(A, int64_t(First), int64_t(blockDim.x), R);
#pragma unroll
    for (int B = 0; B < FlatBatch; ++B) {
      Index E = First + Index(B) * blockDim.x;
      if (E < Index(A.N)) {
#pragma unroll
        for (int J = 0; J < 4; ++J)
          if (J < A.NumOut)
            storeAs(A.Out[J].Ptr,
                    uint64_t(flatOffset<Index>(E, A.OutDiv[J],
                                               A.OutPeriod[J], A.N)),
                    A.Out[J].Type, R[B].get(A.OutReg[J]));
      }
    }
  }
}

/// The flat kernel for a program of Regs registers, its index type
/// chosen by the element count.
template <typename Registers>
void launchFlat(const PointwiseArgs &A, unsigned Blocks, cudaStream_t S) {
  if (A.N < (int64_t(1) << 31))
    pointwiseFlatKernel<uint32_t, Registers><<<Blocks, Threads, 0, S>>>(A);
  else
    pointwiseFlatKernel<uint64_t, Registers><<<Blocks, Threads, 0, S>>>(A);
}

/// Any strides, offsets below 2^31: each element's offsets from its
/// index by a multiply and a shift per dim, FlatBatch elements a thread
/// as in the flat kernel.
template <typename Registers>
__global__ void
pointwiseStridedKernel(const __grid_constant__ PointwiseArgs A) {
  uint32_t N = uint32_t(A.N), Step = gridDim.x * blockDim.x * FlatBatch;
  for (uint32_t First = blockIdx.x * blockDim.x * FlatBatch + threadIdx.x;
       First < N; First += Step) {
    Registers R[FlatBatch];
    uint32_t OutOff[FlatBatch][4] = {};
#pragma unroll
    for (int B = 0; B < FlatBatch; ++B) {
      uint32_t E = First + uint32_t(B) * blockDim.x;
      if (E >= N)
        continue;
      uint32_t InOff[8] = {}, Rest = E;
#pragma unroll
      for (int D = MaxRank - 1; D >= 0; --D) {
        if (D >= A.Rank)
          continue;
        uint32_t I = Rest;
        if (D > 0)
          Rest = A.Dim[D].divmod(Rest, I);
#pragma unroll
        for (int J = 0; J < 8; ++J)
          if (J < A.NumIn)
            InOff[J] += I * A.InStride[J][D];
#pragma unroll
        for (int J = 0; J < 4; ++J)
          if (J < A.NumOut)
            OutOff[B][J] += I * A.OutStride[J][D];
      }
#pragma unroll
      for (int J = 0; J < (Registers::Size < 8 ? Registers::Size : 8); ++J)
        if (J < A.NumIn)
          R[B].V[J] = loadAs(A.In[J].Ptr, uint64_t(InOff[J]), A.In[J].Type);
    }
    runProgramBatch<FlatBatch>(A, int64_t(First), int64_t(blockDim.x), R);
#pragma unroll
    for (int B = 0; B < FlatBatch; ++B) {
      uint32_t E = First + uint32_t(B) * blockDim.x;
      if (E < N) {
#pragma unroll
        for (int J = 0; J < 4; ++J)
          if (J < A.NumOut)
            storeAs(A.Out[J].Ptr, uint64_t(OutOff[B][J]), A.Out[J].Type,
                    R[B].get(A.OutReg[J]));
      }
    }
  }
}

/// Any strides, any size: each element's offsets from its index, dim by
/// dim, in 64 bits.
__global__ void pointwiseKernel(const __grid_constant__ PointwiseArgs A) {
  const Strided &O0 = A.Out[0];
  for (int64_t E = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; E < A.N;
       E += int64_t(gridDim.x) * blockDim.x) {
    int64_t InOff[8] = {}, OutOff[4] = {};
    int64_t Rest = E;
    for (int D = O0.Rank - 1; D >= 0; --D) {
      int64_t Size = O0.Shape[D] ? O0.Shape[D] : 1;
      int64_t I = Rest % Size;
      Rest /= Size;
#pragma unroll
      for (int J = 0; J < 8; ++J)
        if (J < A.NumIn)
          InOff[J] += I * A.In[J].Strides[D];
#pragma unroll
      for (int J = 0; J < 4; ++J)
        if (J < A.NumOut)
          OutOff[J] += I * A.Out[J].Strides[D];
    }
    pointwiseElement(A, E, InOff, OutOff);
  }
}

/// Whether X's offset for output element E is (E / Div) % Period: from the
/// innermost dim, dims X does not move along (stride 0), then dims laid
/// out densely, then again dims it does not move along.
bool flatOffsets(const Strided &X, const Strided &Out, int64_t &Div,
                 int64_t &Period) {
  Div = 1, Period = 1;
  int D = Out.Rank - 1;
  for (; D >= 0 && (Out.Shape[D] == 1 || X.Strides[D] == 0); --D)
    Div *= Out.Shape[D];
  for (; D >= 0 && (Out.Shape[D] == 1 || X.Strides[D] == Period); --D)
    Period *= Out.Shape[D];
  for (; D >= 0; --D)
    if (Out.Shape[D] != 1 && X.Strides[D] != 0)
      return false;
  return Div > 0 && Period > 0;
}

/// Fills A's strided-path dims (PointwiseArgs::Rank); false when
/// some offset or the element count needs more than 31 bits, or a stride
/// is negative.
bool narrowDims(PointwiseArgs &A) {
  const Strided &O = A.Out[0];
  const Strided *Ops[12];
  int NumOps = 0;
  for (int J = 0; J < A.NumIn; ++J)
    Ops[NumOps++] = &A.In[J];
  for (int J = 0; J < A.NumOut; ++J)
    Ops[NumOps++] = &A.Out[J];
  const int64_t Limit = int64_t(1) << 31;
  if (A.N >= Limit)
    return false;
  for (int K = 0; K < NumOps; ++K) {
    if (Ops[K]->Rank != O.Rank)
      return false;
    int64_t Last = 0;
    for (int D = 0; D < O.Rank; ++D) {
      if (Ops[K]->Strides[D] < 0)
        return false;
      Last += (O.Shape[D] - 1) * Ops[K]->Strides[D];
    }
    if (Last >= Limit)
      return false;
  }
  // From the innermost dim out: drop dims of size 1, and merge a dim into
  // the one inside it where every operand's stride continues it.
  int64_t Size[MaxRank], Stride[12][MaxRank];
  int Rank = 0;
  for (int D = O.Rank - 1; D >= 0; --D) {
    if (O.Shape[D] == 1)
      continue;
    bool Merges = Rank > 0;
    for (int K = 0; K < NumOps && Merges; ++K)
      Merges = Ops[K]->Strides[D] == Stride[K][Rank - 1] * Size[Rank - 1];
    if (Merges) {
      Size[Rank - 1] *= O.Shape[D];
      continue;
    }
    Size[Rank] = O.Shape[D];
    for (int K = 0; K < NumOps; ++K)
      Stride[K][Rank] = Ops[K]->Strides[D];
    ++Rank;
  }
  // Stored outermost first.
  A.Rank = Rank;
  for (int D = 0; D < Rank; ++D) {
    int From = Rank - 1 - D;
    A.Dim[D] = FastDivmod(uint32_t(Size[From]));
    for (int J = 0; J < A.NumIn; ++J)
      A.InStride[J][D] = uint32_t(Stride[J][From]);
    for (int J = 0; J < A.NumOut; ++J)
      A.OutStride[J][D] = uint32_t(Stride[A.NumIn + J][From]);
  }
  return true;
}

std::string pointwise(const plan::Kernel &K, const KernelOperands &Ops,
                      const KernelContext &C, cudaStream_t S) {
  PointwiseArgs A;
  const std::vector<int64_t> &I = K.Ints;
  int64_t Regs = I[0], N = I[1];
  if (Regs > MaxRegisters || N > MaxInstructions ||
      K.Floats.size() > size_t(MaxConstants) || K.Inputs.size() > 8 ||
      K.Outputs.size() > 4 || K.Outputs[0].Shape.size() > size_t(MaxRank))
    return "a pointwise program longer than dsrun runs (" +
           std::to_string(N) + " instructions, " + std::to_string(Regs) +
           " registers)";
  A.NumIn = int(K.Inputs.size());
  A.NumOut = int(K.Outputs.size());
  for (int J = 0; J < A.NumIn; ++J)
    A.In[J] = strided(K.Inputs[J], Ops.In[J], Ops.InType[J]);
  for (int J = 0; J < A.NumOut; ++J)
    A.Out[J] = strided(K.Outputs[J], Ops.Out[J], Ops.OutType[J]);
  A.Instructions = int(N);
  for (int64_t J = 0; J < N; ++J)
    for (int F = 0; F < 5; ++F)
      A.Code[J][F] = int16_t(I[size_t(2 + 5 * J + F)]);
  for (int J = 0; J < A.NumOut; ++J)
    A.OutReg[J] = int(I[size_t(3 + 5 * N + J)]);
  for (size_t J = 0; J < K.Floats.size(); ++J)
    A.Constants[J] = float(K.Floats[J]);
  A.Seed = C.Seed;
  A.Inference = C.Inference;
  A.N = numel(K.Outputs[0].Shape);
  A.Flat = true;
  for (int J = 0; J < A.NumIn; ++J)
    A.Flat &= flatOffsets(A.In[J], A.Out[0], A.InDiv[J], A.InPeriod[J]);
  for (int J = 0; J < A.NumOut; ++J)
    A.Flat &= flatOffsets(A.Out[J], A.Out[0], A.OutDiv[J], A.OutPeriod[J]);
  if (!A.N)
    return "";
  // A program of no instructions between two dense operands of one type
  // is a copy: the copy engine's rate, not a kernel's.
  if (A.Flat && N == 0 && A.NumIn == 1 && A.NumOut == 1 &&
      A.In[0].Type == A.Out[0].Type && A.OutReg[0] == 0 &&
      dense(A.InDiv[0], A.InPeriod[0], A.N) &&
      dense(A.OutDiv[0], A.OutPeriod[0], A.N)) {
    cudaError_t E = cudaMemcpyAsync(A.Out[0].Ptr, A.In[0].Ptr,
                                    uint64_t(A.N) * elementBytes(A.In[0].Type),
                                    cudaMemcpyDeviceToDevice, S);
    return E == cudaSuccess ? "" : cudaGetErrorString(E);
  }
  unsigned Blocks = blocksFor(uint64_t(A.N));
  unsigned FlatBlocks = blocksFor((uint64_t(A.N) + FlatBatch - 1) / FlatBatch);
  // Inputs take the first registers; a program of few registers keeps
  // them in the thread's own.
  int64_t Registers = std::max<int64_t>(Regs, A.NumIn);
  if (A.Flat) {
    if (Registers <= 4)
      launchFlat<SelectRegisters<4>>(A, FlatBlocks, S);
    else if (Registers <= 8)
      launchFlat<SelectRegisters<8>>(A, FlatBlocks, S);
    else
      launchFlat<LocalRegisters>(A, FlatBlocks, S);
  } else if (narrowDims(A)) {
    if (Registers <= 4)
      pointwiseStridedKernel<SelectRegisters<4>><<<FlatBlocks, Threads, 0, S>>>(A);
    else if (Registers <= 8)
      pointwiseStridedKernel<SelectRegisters<8>><<<FlatBlocks, Threads, 0, S>>>(A);
    else
      pointwiseStridedKernel<LocalRegisters><<<FlatBlocks, Threads, 0, S>>>(A);
  } else {
    pointwiseKernel<<<Blocks, Threads, 0, S>>>(A);
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Column sums: bias and norm weight gradients (include/dsc/ColumnSums.h)
//===----------------------------------------------------------------------===//

constexpr int TileCols = 32, TileRows = 8;

/// A [Rows, Cols] matrix summed over its rows. Bias gradients sum G
/// itself; a norm's weight and bias gradients sum G * x-hat and G, where
/// x-hat = (X - Mean[row]) * Rstd[row] (no mean for RMSNorm).
struct ColumnSumArgs {
  const void *G = nullptr;
  ElementType GT = ElementType::F32;
  const void *X = nullptr; ///< Norms only.
  ElementType XT = ElementType::F32;
  const float *Mean = nullptr, *Rstd = nullptr;
  int64_t Rows = 0, Cols = 0, ChunkRows = 0;
  int Sums = 1;
  void *Out[2] = {};
  ElementType OutT[2] = {ElementType::F32, ElementType::F32};
  float Scale = 1;
  float *Partial = nullptr; ///< [chunk][sum][col]; null: one chunk.
};

/// Pass 1: a tile of 32 columns of one chunk of rows; each of 8 row lanes
/// sums every 8th row in order, then the lanes are added in order.
__global__ void columnSumChunks(const __grid_constant__ ColumnSumArgs A) {
  int64_t C = int64_t(blockIdx.x) * TileCols + threadIdx.x;
  int64_t Chunk = blockIdx.y;
  int64_t End = min(A.Rows, (Chunk + 1) * A.ChunkRows);
  float S0 = 0, S1 = 0;
  if (C < A.Cols)
    for (int64_t R = Chunk * A.ChunkRows + threadIdx.y; R < End;
         R += TileRows) {
      uint64_t At = uint64_t(R) * uint64_t(A.Cols) + uint64_t(C);
      float G = loadAs(A.G, At, A.GT);
      if (A.X) {
        float Xh = (loadAs(A.X, At, A.XT) - (A.Mean ? A.Mean[R] : 0.0f)) *
                   A.Rstd[R];
        S0 += G * Xh;
        S1 += G;
      } else {
        S0 += G;
      }
    }
  __shared__ float Tile[2][TileRows][TileCols];
  Tile[0][threadIdx.y][threadIdx.x] = S0;
  Tile[1][threadIdx.y][threadIdx.x] = S1;
  __syncthreads();
  int K = int(threadIdx.y);
  if (K >= A.Sums || C >= A.Cols)
    return;
  float Sum = 0;
  for (int Y = 0; Y < TileRows; ++Y)
    Sum += Tile[K][Y][threadIdx.x];
  if (A.Partial)
    A.Partial[(uint64_t(Chunk) * A.Sums + K) * uint64_t(A.Cols) + C] = Sum;
  else
    storeAs(A.Out[K], uint64_t(C), A.OutT[K], Sum * A.Scale);
}

/// Pass 2: each column's chunk sums, added in chunk order.
__global__ void columnSumTotals(const __grid_constant__ ColumnSumArgs A,
                                int64_t Chunks) {
  int64_t C = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int K = int(blockIdx.y);
  if (C >= A.Cols)
    return;
  float Sum = 0;
  for (int64_t Ch = 0; Ch < Chunks; ++Ch)
    Sum += A.Partial[(uint64_t(Ch) * A.Sums + K) * uint64_t(A.Cols) + C];
  storeAs(A.Out[K], uint64_t(C), A.OutT[K], Sum * A.Scale);
}

/// Pass 1 over 16-bit matrices whose rows start on 16 bytes: each thread
/// takes 8 adjacent columns with one load per row (a block 256 columns),
/// and every column is summed in the order above, so the sums are the
/// same to the bit.
template <ElementType T>
__global__ void columnSumChunks8(const __grid_constant__ ColumnSumArgs A) {
  constexpr int Cols = TileCols * 8;
  int64_t C0 = (int64_t(blockIdx.x) * TileCols + threadIdx.x) * 8;
  int64_t Chunk = blockIdx.y;
  int64_t End = min(A.Rows, (Chunk + 1) * A.ChunkRows);
  float S0[8] = {}, S1[8] = {};
  if (C0 < A.Cols)
    for (int64_t R = Chunk * A.ChunkRows + threadIdx.y; R < End;
         R += TileRows) {
      uint64_t At = uint64_t(R) * uint64_t(A.Cols) + uint64_t(C0);
      uint4 GRaw = *reinterpret_cast<const uint4 *>(
          static_cast<const uint16_t *>(A.G) + At);
      const uint16_t *G = reinterpret_cast<const uint16_t *>(&GRaw);
      if (A.X) {
        uint4 XRaw = *reinterpret_cast<const uint4 *>(
            static_cast<const uint16_t *>(A.X) + At);
        const uint16_t *X = reinterpret_cast<const uint16_t *>(&XRaw);
        float M = A.Mean ? A.Mean[R] : 0.0f, Rs = A.Rstd[R];
#pragma unroll
        for (int I = 0; I < 8; ++I) {
          float Gv = from16<T>(G[I]);
          S0[I] += Gv * ((from16<T>(X[I]) - M) * Rs);
          S1[I] += Gv;
        }
      } else {
#pragma unroll
        for (int I = 0; I < 8; ++I)
          S0[I] += from16<T>(G[I]);
      }
    }
  __shared__ float Tile[2][TileRows][Cols];
#pragma unroll
  for (int I = 0; I < 8; ++I) {
    Tile[0][threadIdx.y][threadIdx.x * 8 + I] = S0[I];
    Tile[1][threadIdx.y][threadIdx.x * 8 + I] = S1[I];
  }
  __syncthreads();
  int K = int(threadIdx.y);
  if (K >= A.Sums || C0 >= A.Cols)
    return;
#pragma unroll
  for (int I = 0; I < 8; ++I) {
    float Sum = 0;
    for (int Y = 0; Y < TileRows; ++Y)
      Sum += Tile[K][Y][threadIdx.x * 8 + I];
    int64_t C = C0 + I;
    if (A.Partial)
      A.Partial[(uint64_t(Chunk) * A.Sums + K) * uint64_t(A.Cols) + C] = Sum;
    else
      storeAs(A.Out[K], uint64_t(C), A.OutT[K], Sum * A.Scale);
  }
}

/// The 16-bit type both matrices share where columnSumChunks8 applies,
/// else F32.
ElementType vectorColumnType(const ColumnSumArgs &A) {
  auto Aligned = [](const void *P) {
    return reinterpret_cast<uintptr_t>(P) % 16 == 0;
  };
  if (A.Cols % 8 || (A.GT != ElementType::BF16 && A.GT != ElementType::F16) ||
      !Aligned(A.G) || (A.X && (A.XT != A.GT || !Aligned(A.X))))
    return ElementType::F32;
  return A.GT;
}

std::string columnSums(ColumnSumArgs A, const KernelContext &Ctx,
                       cudaStream_t S) {
  if (!A.Cols)
    return "";
  // ModelProgram::resolve checked the workspace (kernelWorkspaceBytes)
  // once, at start-up.
  int64_t Chunks = dsc::columnChunks(A.Rows);
  A.ChunkRows = dsc::columnChunkRows(A.Rows);
  A.Partial = Chunks > 1 ? static_cast<float *>(Ctx.Workspace) : nullptr;
  unsigned Tiles = unsigned((A.Cols + TileCols - 1) / TileCols);
  ElementType Vector = vectorColumnType(A);
  unsigned Tiles8 = unsigned((A.Cols + TileCols * 8 - 1) / (TileCols * 8));
  if (Chunks > 0 && Vector == ElementType::BF16)
    columnSumChunks8<ElementType::BF16>
        <<<dim3(Tiles8, unsigned(Chunks)), dim3(TileCols, TileRows), 0, S>>>(A);
  else if (Chunks > 0 && Vector == ElementType::F16)
    columnSumChunks8<ElementType::F16>
        <<<dim3(Tiles8, unsigned(Chunks)), dim3(TileCols, TileRows), 0, S>>>(A);
  else if (Chunks > 0)
    columnSumChunks<<<dim3(Tiles, unsigned(Chunks)), dim3(TileCols, TileRows),
                      0, S>>>(A);
  if (Chunks != 1) // Several chunks to add, or no rows: zeros.
    columnSumTotals<<<dim3(unsigned((A.Cols + Threads - 1) / Threads),
                           unsigned(A.Sums)),
                      Threads, 0, S>>>(A, Chunks);
  return "";
}

//===----------------------------------------------------------------------===//
// Fill, reduce
//===----------------------------------------------------------------------===//

__global__ void fillKernel(const __grid_constant__ Strided Y, int64_t N,
                           float V) {
  for (int64_t E = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; E < N;
       E += int64_t(gridDim.x) * blockDim.x) {
    int64_t Rest = E, Off = 0;
    for (int D = Y.Rank - 1; D >= 0; --D) {
      Off += (Rest % Y.Shape[D]) * Y.Strides[D];
      Rest /= Y.Shape[D];
    }
    storeAs(Y.Ptr, uint64_t(Off), Y.Type, V);
  }
}

struct ReduceArgs {
  Strided X;
  void *Y;
  ElementType YType;
  int KeptRank = 0, ReducedRank = 0;
  int64_t KeptShape[MaxRank], KeptStrides[MaxRank];
  int64_t ReducedShape[MaxRank], ReducedStrides[MaxRank];
  int64_t Kept = 1, Reduced = 1;
  float Scale = 1;
};

/// One thread per output element, summing its reduced elements in order.
__global__ void reduceKernel(const __grid_constant__ ReduceArgs A) {
  for (int64_t O = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; O < A.Kept;
       O += int64_t(gridDim.x) * blockDim.x) {
    int64_t Rest = O, Base = 0;
    for (int D = A.KeptRank - 1; D >= 0; --D) {
      Base += (Rest % A.KeptShape[D]) * A.KeptStrides[D];
      Rest /= A.KeptShape[D];
    }
    float Sum = 0;
    for (int64_t R = 0; R < A.Reduced; ++R) {
      int64_t Rr = R, Off = Base;
      for (int D = A.ReducedRank - 1; D >= 0; --D) {
        Off += (Rr % A.ReducedShape[D]) * A.ReducedStrides[D];
        Rr /= A.ReducedShape[D];
      }
      Sum += loadAs(A.X.Ptr, uint64_t(Off), A.X.Type);
    }
    storeAs(A.Y, uint64_t(O), A.YType, Sum * A.Scale);
  }
}

std::string reduce(const plan::Kernel &K, const KernelOperands &Ops,
                   const KernelContext &C, cudaStream_t S) {
  const plan::TensorRef &X = K.Inputs[0];
  int64_t Rows = 0, Cols = 0;
  if (dsc::reducesLeadingRows(X.Shape, X.Strides, K.Ints[0], Rows, Cols)) {
    // A bias gradient: the whole GPU, in a fixed order.
    ColumnSumArgs Sum;
    Sum.G = Ops.In[0];
    Sum.GT = Ops.InType[0];
    Sum.Rows = Rows;
    Sum.Cols = Cols;
    Sum.Out[0] = Ops.Out[0];
    Sum.OutT[0] = Ops.OutType[0];
    Sum.Scale = float(K.Floats[0]);
    return columnSums(Sum, C, S);
  }
  ReduceArgs A;
  A.X = strided(X, Ops.In[0], Ops.InType[0]);
  A.Y = Ops.Out[0];
  A.YType = Ops.OutType[0];
  for (size_t D = 0; D < X.Shape.size(); ++D) {
    if (K.Ints[0] >> D & 1) {
      A.ReducedShape[A.ReducedRank] = X.Shape[D];
      A.ReducedStrides[A.ReducedRank++] = X.Strides[D];
      A.Reduced *= X.Shape[D];
    } else {
      A.KeptShape[A.KeptRank] = X.Shape[D];
      A.KeptStrides[A.KeptRank++] = X.Strides[D];
      A.Kept *= X.Shape[D];
    }
  }
  A.Scale = float(K.Floats[0]);
  if (A.Kept)
    reduceKernel<<<blocksFor(uint64_t(A.Kept)), Threads, 0, S>>>(A);
  return "";
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

__global__ void softmaxKernel(const void *X, ElementType XT, void *Y,
                              ElementType YT, int64_t Cols, bool Log,
                              bool ZeroMasked) {
  uint64_t Row = uint64_t(blockIdx.x) * uint64_t(Cols);
  float Max = -INFINITY;
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x)
    Max = fmaxf(Max, loadAs(X, Row + C, XT));
  Max = blockReduce(Max, true);
  if (ZeroMasked && Max == -INFINITY) {
    for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x)
      storeAs(Y, Row + C, YT, 0.0f);
    return;
  }
  float Sum = 0;
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x)
    Sum += expf(loadAs(X, Row + C, XT) - Max);
  Sum = blockReduce(Sum, false);
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float Z = loadAs(X, Row + C, XT) - Max;
    storeAs(Y, Row + C, YT, Log ? Z - logf(Sum) : expf(Z) / Sum);
  }
}

__global__ void softmaxGradKernel(const void *Y, ElementType YT, const void *G,
                                  ElementType GT, void *D, ElementType DT,
                                  int64_t Cols, bool Log) {
  uint64_t Row = uint64_t(blockIdx.x) * uint64_t(Cols);
  float Dot = 0;
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x)
    Dot += Log ? loadAs(G, Row + C, GT)
               : loadAs(G, Row + C, GT) * loadAs(Y, Row + C, YT);
  Dot = blockReduce(Dot, false);
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float Yv = loadAs(Y, Row + C, YT), Gv = loadAs(G, Row + C, GT);
    storeAs(D, Row + C, DT, Log ? Gv - expf(Yv) * Dot : Yv * (Gv - Dot));
  }
}

//===----------------------------------------------------------------------===//
// Layer and RMS normalization
//===----------------------------------------------------------------------===//

/// V as a value of type T holds it.
__device__ __forceinline__ float roundAs(float V, ElementType T) {
  return T == ElementType::BF16  ? fromBF16(toBF16(V))
         : T == ElementType::F16 ? fromFP16(toFP16(V))
                                 : V;
}

/// Mean (0 for RMS) and rstd of each row; y = (x - mean) rstd w + b. With
/// X2 (a residual add folded in), x = X + X2 as Sum stores it, and Sum
/// keeps it.
__global__ void normKernel(const void *X, ElementType XT, const void *X2,
                           ElementType X2T, void *Sum, ElementType SumT,
                           const void *W, ElementType WT, const void *B,
                           ElementType BT, void *Y, ElementType YT,
                           float *Mean, float *Rstd, int64_t Cols, float Eps,
                           bool Rms) {
  uint64_t Row = uint64_t(blockIdx.x) * uint64_t(Cols);
  auto In = [&](int64_t C) {
    float V = loadAs(X, Row + C, XT);
    return X2 ? roundAs(V + loadAs(X2, Row + C, X2T), SumT) : V;
  };
  if (X2)
    for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x)
      storeAs(Sum, Row + C, SumT, In(C));
  float Mu = 0;
  if (!Rms) {
    float Total = 0;
    for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x)
      Total += In(C);
    Mu = blockReduce(Total, false) / float(Cols);
  }
  float Var = 0;
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float D = In(C) - Mu;
    Var += D * D;
  }
  float S = rsqrtf(blockReduce(Var, false) / float(Cols) + Eps);
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float V = (In(C) - Mu) * S * loadAs(W, C, WT);
    if (B)
      V += loadAs(B, C, BT);
    storeAs(Y, Row + C, YT, V);
  }
  if (threadIdx.x == 0) {
    if (Mean)
      Mean[blockIdx.x] = Mu;
    Rstd[blockIdx.x] = S;
  }
}

/// dx of each row; with G (the residual stream's gradient folded in),
/// dx as stored plus G.
__global__ void normGradKernel(const void *Dy, ElementType DyT, const void *X,
                               ElementType XT, const void *W, ElementType WT,
                               const float *Mean, const float *Rstd,
                               const void *G, ElementType GT, void *Dx,
                               ElementType DxT, int64_t Cols) {
  uint64_t Row = uint64_t(blockIdx.x) * uint64_t(Cols);
  float M = Mean ? Mean[blockIdx.x] : 0.0f, S = Rstd[blockIdx.x];
  float SumG = 0, SumGX = 0;
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float Gw = loadAs(Dy, Row + C, DyT) * loadAs(W, C, WT);
    float Xh = (loadAs(X, Row + C, XT) - M) * S;
    SumG += Gw;
    SumGX += Gw * Xh;
  }
  float MeanG = blockReduce(SumG, false) / float(Cols);
  float MeanGX = blockReduce(SumGX, false) / float(Cols);
  for (int64_t C = threadIdx.x; C < Cols; C += blockDim.x) {
    float Gw = loadAs(Dy, Row + C, DyT) * loadAs(W, C, WT);
    float Xh = (loadAs(X, Row + C, XT) - M) * S;
    float D = Mean ? S * (Gw - MeanG - Xh * MeanGX) : S * (Gw - Xh * MeanGX);
    if (G)
      D = roundAs(D, DxT) + loadAs(G, Row + C, GT);
    storeAs(Dx, Row + C, DxT, D);
  }
}

//===----------------------------------------------------------------------===//
// Norms over rows of 16-bit values: eight per thread, read once
//===----------------------------------------------------------------------===//
//
// The kernels above read each operand two or three times, two bytes at a
// time, with the element type decided per load: about 300 GB/s. Where
// every row operand and the weights are one 16-bit type, the row length
// is a multiple of 8 and every row starts on 16 bytes, a thread loads its
// eight elements of each operand with one 16-byte load, keeps them in
// registers through both reductions, and stores eight at once. The math
// is the kernels' above, term for term; only the order of the row sums
// differs.

/// Two sums over the block at once (one pass of shared memory).
__device__ float2 blockSum2(float2 V) {
  __shared__ float2 Partial[32];
  __shared__ float2 Result;
  V.x = warpSum(V.x);
  V.y = warpSum(V.y);
  int Lane = threadIdx.x % 32, Warp = threadIdx.x / 32;
  if (Lane == 0)
    Partial[Warp] = V;
  __syncthreads();
  if (Warp == 0) {
    int Warps = (blockDim.x + 31) / 32;
    float2 X = Lane < Warps ? Partial[Lane] : make_float2(0, 0);
    X.x = warpSum(X.x);
    X.y = warpSum(X.y);
    if (Lane == 0)
      Result = X;
  }
  __syncthreads();
  return Result;
}

struct NormRowArgs {
  const void *X, *X2, *W, *B; // X2: the residual addend (null: none)
  void *Sum, *Y;
  float *Mean, *Rstd;
  int64_t Cols;
  float Eps;
  bool Rms;
};

template <ElementType T>
__global__ void normRowsKernel(const __grid_constant__ NormRowArgs A) {
  int64_t C0 = int64_t(threadIdx.x) * VecElems;
  bool Live = C0 < A.Cols;
  uint64_t At = uint64_t(blockIdx.x) * uint64_t(A.Cols) + uint64_t(C0);
  float X[VecElems] = {};
  if (Live) {
    load8<T>(X, A.X, At);
    if (A.X2) {
      float X2[VecElems];
      load8<T>(X2, A.X2, At);
#pragma unroll
      for (int I = 0; I < VecElems; ++I)
        X[I] = from16<T>(to16<T>(X[I] + X2[I]));
      store8<T>(A.Sum, At, X);
    }
  }
  float Mu = 0;
  if (!A.Rms) {
    float Total = 0;
#pragma unroll
    for (int I = 0; I < VecElems; ++I)
      Total += X[I];
    Mu = blockReduce(Total, false) / float(A.Cols);
  }
  float Var = 0;
  if (Live)
#pragma unroll
    for (int I = 0; I < VecElems; ++I)
      Var += (X[I] - Mu) * (X[I] - Mu);
  float S = rsqrtf(blockReduce(Var, false) / float(A.Cols) + A.Eps);
  if (Live) {
    float W[VecElems], B[VecElems] = {};
    load8<T>(W, A.W, uint64_t(C0));
    if (A.B)
      load8<T>(B, A.B, uint64_t(C0));
#pragma unroll
    for (int I = 0; I < VecElems; ++I) {
      X[I] = (X[I] - Mu) * S * W[I];
      if (A.B)
        X[I] += B[I];
    }
    store8<T>(A.Y, At, X);
  }
  if (threadIdx.x == 0) {
    if (A.Mean)
      A.Mean[blockIdx.x] = Mu;
    A.Rstd[blockIdx.x] = S;
  }
}

struct NormGradRowArgs {
  const void *Dy, *X, *W, *G; // G: the residual stream's gradient, or null
  const float *Mean, *Rstd;
  void *Dx;
  int64_t Cols;
};

template <ElementType T>
__global__ void normGradRowsKernel(const __grid_constant__ NormGradRowArgs A) {
  int64_t C0 = int64_t(threadIdx.x) * VecElems;
  bool Live = C0 < A.Cols;
  uint64_t At = uint64_t(blockIdx.x) * uint64_t(A.Cols) + uint64_t(C0);
  float M = A.Mean ? A.Mean[blockIdx.x] : 0.0f, S = A.Rstd[blockIdx.x];
  float Gw[VecElems] = {}, Xh[VecElems] = {};
  float2 Sums = make_float2(0, 0);
  if (Live) {
    float W[VecElems];
    load8<T>(Gw, A.Dy, At);
    load8<T>(Xh, A.X, At);
    load8<T>(W, A.W, uint64_t(C0));
#pragma unroll
    for (int I = 0; I < VecElems; ++I) {
      Gw[I] *= W[I];
      Xh[I] = (Xh[I] - M) * S;
      Sums.x += Gw[I];
      Sums.y += Gw[I] * Xh[I];
    }
  }
  Sums = blockSum2(Sums);
  if (!Live)
    return;
  float MeanG = Sums.x / float(A.Cols), MeanGX = Sums.y / float(A.Cols);
  float G[VecElems];
  if (A.G)
    load8<T>(G, A.G, At);
#pragma unroll
  for (int I = 0; I < VecElems; ++I) {
    float D = A.Mean ? S * (Gw[I] - MeanG - Xh[I] * MeanGX)
                     : S * (Gw[I] - Xh[I] * MeanGX);
    Gw[I] = A.G ? from16<T>(to16<T>(D)) + G[I] : D;
  }
  store8<T>(A.Dx, At, Gw);
}

/// Operand positions of a kernel, at most four each side.
struct OperandList {
  size_t At[4];
  int N = 0;
  OperandList &add(size_t I) { At[N++] = I; return *this; }
};

/// The one 16-bit type of the listed operands, or F32 where the vector
/// kernels do not apply (mixed types, odd row lengths, unaligned rows).
ElementType vectorNormType(const KernelOperands &Ops, int64_t Cols,
                           const OperandList &In, const OperandList &Out) {
  if (Cols % VecElems || Cols > MaxVecCols)
    return ElementType::F32;
  ElementType T = Ops.InType[In.At[0]];
  if (T != ElementType::BF16 && T != ElementType::F16)
    return ElementType::F32;
  auto Fits = [&](const void *P, ElementType PT) {
    return PT == T && reinterpret_cast<uintptr_t>(P) % 16 == 0;
  };
  for (int I = 0; I < In.N; ++I)
    if (!Fits(Ops.In[In.At[I]], Ops.InType[In.At[I]]))
      return ElementType::F32;
  for (int I = 0; I < Out.N; ++I)
    if (!Fits(Ops.Out[Out.At[I]], Ops.OutType[Out.At[I]]))
      return ElementType::F32;
  return T;
}

unsigned vectorNormThreads(int64_t Cols) {
  return unsigned((Cols / VecElems + 31) / 32 * 32);
}

/// The vector kernels where they apply; false leaves the launch to the
/// general ones.
bool launchVectorNorm(const plan::Kernel &K, const KernelOperands &Ops,
                      cudaStream_t S) {
  int64_t Rows = K.Ints[0], Cols = K.Ints[1];
  size_t R = K.Ints.size() > 2 && K.Ints[2] == 1 ? 1 : 0;
  bool Rms = K.Kind == KernelKind::RMSNorm || K.Kind == KernelKind::RMSNormGrad;
  if (!Rows)
    return false;
  if (K.Kind == KernelKind::LayerNorm || K.Kind == KernelKind::RMSNorm) {
    // x, [x2,] w, [b] -> y, [mean,] rstd, [sum]
    bool Bias = !Rms && Ops.In.size() > 2 + R;
    OperandList In, Out;
    for (size_t I = 0; I < 2 + R + Bias; ++I)
      In.add(I);
    Out.add(0);
    if (R)
      Out.add(Ops.Out.size() - 1);
    ElementType T = vectorNormType(Ops, Cols, In, Out);
    if (T == ElementType::F32)
      return false;
    NormRowArgs A;
    A.X = Ops.In[0];
    A.X2 = R ? Ops.In[1] : nullptr;
    A.W = Ops.In[1 + R];
    A.B = Bias ? Ops.In[2 + R] : nullptr;
    A.Sum = R ? Ops.Out.back() : nullptr;
    A.Y = Ops.Out[0];
    A.Mean = Rms ? nullptr : static_cast<float *>(Ops.Out[1]);
    A.Rstd = static_cast<float *>(Ops.Out[Rms ? 1 : 2]);
    A.Cols = Cols;
    A.Eps = float(K.Floats[0]);
    A.Rms = Rms;
    if (T == ElementType::BF16)
      normRowsKernel<ElementType::BF16>
          <<<unsigned(Rows), vectorNormThreads(Cols), 0, S>>>(A);
    else
      normRowsKernel<ElementType::F16>
          <<<unsigned(Rows), vectorNormThreads(Cols), 0, S>>>(A);
    return true;
  }
  // dy, x, w, [mean,] rstd, [g] -> dx, ...
  OperandList In, Out;
  In.add(0).add(1).add(2);
  if (R)
    In.add(Ops.In.size() - 1);
  Out.add(0);
  ElementType T = vectorNormType(Ops, Cols, In, Out);
  if (T == ElementType::F32)
    return false;
  NormGradRowArgs A;
  A.Dy = Ops.In[0];
  A.X = Ops.In[1];
  A.W = Ops.In[2];
  A.G = R ? Ops.In.back() : nullptr;
  A.Mean = Rms ? nullptr : static_cast<const float *>(Ops.In[3]);
  A.Rstd = static_cast<const float *>(Ops.In[Rms ? 3 : 4]);
  A.Dx = Ops.Out[0];
  A.Cols = Cols;
  if (T == ElementType::BF16)
    normGradRowsKernel<ElementType::BF16>
        <<<unsigned(Rows), vectorNormThreads(Cols), 0, S>>>(A);
  else
    normGradRowsKernel<ElementType::F16>
        <<<unsigned(Rows), vectorNormThreads(Cols), 0, S>>>(A);
  return true;
}

std::string norm(const plan::Kernel &K, const KernelOperands &Ops,
                 const KernelContext &C, cudaStream_t S) {
  int64_t Rows = K.Ints[0], Cols = K.Ints[1];
  // ints[2] = 1: the residual add folded in (forward: two addends first,
  // the sum a last output; backward: the stream's gradient a last input).
  size_t R = K.Ints.size() > 2 && K.Ints[2] == 1 ? 1 : 0;
  bool Rms = K.Kind == KernelKind::RMSNorm || K.Kind == KernelKind::RMSNormGrad;
  bool Vector = launchVectorNorm(K, Ops, S);
  if (K.Kind == KernelKind::LayerNorm || K.Kind == KernelKind::RMSNorm) {
    bool Bias = !Rms && Ops.In.size() > 2 + R;
    if (Rows && !Vector)
      normKernel<<<unsigned(Rows), Threads, 0, S>>>(
          Ops.In[0], Ops.InType[0], R ? Ops.In[1] : nullptr,
          R ? Ops.InType[1] : ElementType::F32, R ? Ops.Out.back() : nullptr,
          R ? Ops.OutType.back() : ElementType::F32, Ops.In[1 + R],
          Ops.InType[1 + R], Bias ? Ops.In[2 + R] : nullptr,
          Bias ? Ops.InType[2 + R] : ElementType::F32, Ops.Out[0],
          Ops.OutType[0], Rms ? nullptr : static_cast<float *>(Ops.Out[1]),
          static_cast<float *>(Ops.Out[Rms ? 1 : 2]), Cols,
          float(K.Floats[0]), Rms);
    return "";
  }
  // dy, x, w, [mean,] rstd, [g] -> dx, dw, [db]
  const float *Mean = Rms ? nullptr : static_cast<const float *>(Ops.In[3]);
  const float *Rstd = static_cast<const float *>(Ops.In[Rms ? 3 : 4]);
  if (Rows && !Vector)
    normGradKernel<<<unsigned(Rows), Threads, 0, S>>>(
        Ops.In[0], Ops.InType[0], Ops.In[1], Ops.InType[1], Ops.In[2],
        Ops.InType[2], Mean, Rstd, R ? Ops.In.back() : nullptr,
        R ? Ops.InType.back() : ElementType::F32, Ops.Out[0], Ops.OutType[0],
        Cols);
  // dw and db: column sums of dy * x-hat and dy.
  ColumnSumArgs Sum;
  Sum.G = Ops.In[0];
  Sum.GT = Ops.InType[0];
  Sum.X = Ops.In[1];
  Sum.XT = Ops.InType[1];
  Sum.Mean = Mean;
  Sum.Rstd = Rstd;
  Sum.Rows = Rows;
  Sum.Cols = Cols;
  Sum.Sums = Rms ? 1 : 2;
  Sum.Out[0] = Ops.Out[1];
  Sum.OutT[0] = Ops.OutType[1];
  if (!Rms) {
    Sum.Out[1] = Ops.Out[2];
    Sum.OutT[1] = Ops.OutType[2];
  }
  return columnSums(Sum, C, S);
}

//===----------------------------------------------------------------------===//
// Attention: scores and probabilities of one batch in the workspace
//===----------------------------------------------------------------------===//

/// Row-major C[b] = alpha A[b] op(B[b]) + beta C[b] for `Batch` matrices
/// at the given strides (elements), through cuBLAS's column major.
cublasStatus_t gemm(cublasHandle_t H, bool TransA, bool TransB, int64_t M,
                    int64_t N, int64_t K, float Alpha, const void *A,
                    ElementType AT, int64_t LdA, int64_t SA, const void *B,
                    ElementType BT, int64_t LdB, int64_t SB, float Beta,
                    void *C, ElementType CT, int64_t LdC, int64_t SC,
                    int64_t Batch) {
  return cublasGemmStridedBatchedEx(
      H, TransB ? CUBLAS_OP_T : CUBLAS_OP_N, TransA ? CUBLAS_OP_T : CUBLAS_OP_N,
      int(N), int(M), int(K), &Alpha, B, cudaType(BT), int(LdB), SB, A,
      cudaType(AT), int(LdA), SA, &Beta, C, cudaType(CT), int(LdC), SC,
      int(Batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

struct AttentionArgs {
  int64_t B, Hq, Hkv, T, Sk, D, Dv;
  bool Causal;
  float Scale;
  /// Bias of this batch element, broadcast through its strides (h, t, s).
  const void *Bias;
  ElementType BiasType;
  int64_t BiasStrides[3];
  /// Rows up to this many keys are held in shared memory by the softmax.
  int64_t CachedCols;
};

/// Scores of one batch [Hq, T, Sk] (fp32, scaled here), masked, to P in
/// the activation type and the log-sum-exp per row; a row with every key
/// masked attends to nothing. With Lse given as input (backward) P is
/// recomputed from it. With dynamic shared memory for a row (Sk floats),
/// each score is read once (masked ones never) instead of three times.
__global__ void attentionSoftmaxKernel(const float *Scores, void *P,
                                       ElementType PT, float *Lse,
                                       bool Recompute, AttentionArgs A) {
  extern __shared__ float Row[];
  bool Cached = !Recompute && A.Sk <= A.CachedCols;
  int64_t R = blockIdx.x; // h * T + t
  int64_t H = R / A.T, Tq = R % A.T;
  const float *S = Scores + R * A.Sk;
  auto Score = [&](int64_t J) {
    if (A.Causal && J > Tq)
      return -INFINITY;
    float V = S[J] * A.Scale;
    if (A.Bias)
      V += loadAs(A.Bias,
                  uint64_t(H * A.BiasStrides[0] + Tq * A.BiasStrides[1] +
                           J * A.BiasStrides[2]),
                  A.BiasType);
    return V;
  };
  float L;
  if (Recompute) {
    L = Lse[R];
  } else {
    float Max = -INFINITY;
    for (int64_t J = threadIdx.x; J < A.Sk; J += blockDim.x) {
      float V = Score(J);
      if (Cached)
        Row[J] = V;
      Max = fmaxf(Max, V);
    }
    Max = blockReduce(Max, true);
    float Sum = 0;
    if (Max != -INFINITY)
      for (int64_t J = threadIdx.x; J < A.Sk; J += blockDim.x)
        Sum += expf((Cached ? Row[J] : Score(J)) - Max);
    Sum = blockReduce(Sum, false);
    L = Sum > 0 ? Max + logf(Sum) : INFINITY;
    if (threadIdx.x == 0)
      Lse[R] = L;
  }
  for (int64_t J = threadIdx.x; J < A.Sk; J += blockDim.x)
    storeAs(P, uint64_t(R * A.Sk + J), PT,
            isinf(L) ? 0.0f : expf((Cached ? Row[J] : Score(J)) - L));
}

/// dS = P (dP - delta) scale, delta = rowsum(dO o O) precomputed.
__global__ void attentionDsKernel(const void *P, ElementType PT,
                                  const float *Dp, const float *Delta,
                                  void *Ds, ElementType DsT, int64_t Sk,
                                  float Scale) {
  int64_t Row = blockIdx.x;
  for (int64_t J = threadIdx.x; J < Sk; J += blockDim.x) {
    uint64_t At = uint64_t(Row * Sk + J);
    float V = loadAs(P, At, PT) * (Dp[At] - Delta[Row]) * Scale;
    storeAs(Ds, At, DsT, V);
  }
}

/// delta[h, t] = sum_d dO[h, t, d] O[h, t, d] for one batch element.
__global__ void attentionDeltaKernel(const __grid_constant__ Strided Do,
                                     const __grid_constant__ Strided O,
                                     int64_t T,
                                     int64_t Dv, float *Delta) {
  int64_t Row = blockIdx.x, H = Row / T, Tq = Row % T;
  float Sum = 0;
  for (int64_t D = threadIdx.x; D < Dv; D += blockDim.x)
    Sum += loadAs(Do.Ptr, uint64_t(H * Do.Strides[1] + Tq * Do.Strides[2] + D * Do.Strides[3]), Do.Type) *
           loadAs(O.Ptr, uint64_t(H * O.Strides[1] + Tq * O.Strides[2] + D * O.Strides[3]), O.Type);
  Sum = blockReduce(Sum, false);
  if (threadIdx.x == 0)
    Delta[Row] = Sum;
}

#define TRY_CUBLAS(Call)                                                       \
  do {                                                                         \
    if (cublasStatus_t E_ = (Call); E_ != CUBLAS_STATUS_SUCCESS)               \
      return "cuBLAS failed (" + std::to_string(int(E_)) + ") in " #Call;      \
  } while (0)

std::string attention(const plan::Kernel &K, const KernelOperands &Ops,
                      const KernelContext &C, cudaStream_t S) {
  bool Grad = K.Kind == KernelKind::AttentionGrad;
  const std::vector<int64_t> &I = K.Ints;
  AttentionArgs A{I[0], I[1], I[2], I[3], I[4], I[5], I[6], I[7] != 0,
                  float(K.Floats[0]), nullptr, ElementType::F32, {0, 0, 0}};
  int64_t G = A.Hq / A.Hkv;
  size_t Qi = Grad ? 1 : 0;
  const plan::TensorRef &Qr = K.Inputs[Qi], &Kr = K.Inputs[Qi + 1],
                        &Vr = K.Inputs[Qi + 2];
  ElementType QT = Ops.InType[Qi], KT = Ops.InType[Qi + 1],
              VT = Ops.InType[Qi + 2];
  // The products read bf16/fp16/fp32 operands of one type.
  ElementType Act = QT;
  if (KT != Act || VT != Act)
    return "attention operands of different element types";
  uint64_t Need = plan::attentionWorkspace(K, elementBytes(Act));
  if (Need > C.WorkspaceBytes)
    return "attention needs " + std::to_string(Need) +
           " bytes of workspace; the plan has " +
           std::to_string(C.WorkspaceBytes);
  uint64_t Cells = uint64_t(A.Hq * A.T * A.Sk);
  char *W = static_cast<char *>(C.Workspace);
  float *Scores = reinterpret_cast<float *>(W);
  void *P = W + Cells * 4;
  void *Ds = W + Cells * 4 + Cells * elementBytes(Act);
  float *Delta =
      reinterpret_cast<float *>(W + Cells * 4 + 2 * Cells * elementBytes(Act));
  size_t BiasAt = Grad ? 6 : 3;
  bool HasBias = K.Inputs.size() > BiasAt;
  TRY_CUBLAS(cublasSetStream(C.Cublas, S));
  unsigned EB = elementBytes(Act);
  auto Ptr = [&](size_t In, int64_t Offset) {
    return static_cast<char *>(Ops.In[In]) + Offset * EB;
  };
  for (int64_t B = 0; B < A.B; ++B) {
    if (HasBias) {
      const plan::TensorRef &Br = K.Inputs[BiasAt];
      A.BiasType = Ops.InType[BiasAt];
      A.Bias = static_cast<char *>(Ops.In[BiasAt]) +
               B * Br.Strides[0] * elementBytes(A.BiasType);
      A.BiasStrides[0] = Br.Strides[1];
      A.BiasStrides[1] = Br.Strides[2];
      A.BiasStrides[2] = Br.Strides[3];
    }
    // Scores of every head: for each query head g of a group, batched
    // over the key/value heads.
    for (int64_t Gq = 0; Gq < G; ++Gq)
      TRY_CUBLAS(gemm(C.Cublas, false, true, A.T, A.Sk, A.D, 1.0f,
                      Ptr(Qi, B * Qr.Strides[0] + Gq * Qr.Strides[1]), Act,
                      Qr.Strides[2], G * Qr.Strides[1],
                      Ptr(Qi + 1, B * Kr.Strides[0]), Act, Kr.Strides[2],
                      Kr.Strides[1], 0.0f, Scores + Gq * A.T * A.Sk,
                      ElementType::F32, A.Sk, G * A.T * A.Sk, A.Hkv));
    float *Lse = static_cast<float *>(Grad ? Ops.In[5] : Ops.Out[1]) +
                 B * A.Hq * A.T;
    // A row of scores in shared memory (at most the 48 KiB every launch
    // may take without opting in).
    A.CachedCols = Grad ? 0 : (A.Sk * 4 <= 48 * 1024 ? A.Sk : 0);
    attentionSoftmaxKernel<<<unsigned(A.Hq * A.T), Threads,
                             size_t(A.CachedCols) * 4, S>>>(Scores, P, Act,
                                                            Lse, Grad, A);
    if (!Grad) {
      // out[b, h] = P[h] V[b, h / G]
      const plan::TensorRef &Or = K.Outputs[0];
      for (int64_t Gq = 0; Gq < G; ++Gq)
        TRY_CUBLAS(gemm(C.Cublas, false, false, A.T, A.Dv, A.Sk, 1.0f,
                        static_cast<char *>(P) + Gq * A.T * A.Sk * EB, Act,
                        A.Sk, G * A.T * A.Sk,
                        Ptr(Qi + 2, B * Vr.Strides[0]), Act, Vr.Strides[2],
                        Vr.Strides[1], 0.0f,
                        static_cast<char *>(Ops.Out[0]) +
                            (B * Or.Strides[0] + Gq * Or.Strides[1]) * EB,
                        Act, Or.Strides[2], G * Or.Strides[1], A.Hkv));
      continue;
    }
    // Backward: dO [B, Hq, T, Dv] and O, as given.
    const plan::TensorRef &Dor = K.Inputs[0], &Or = K.Inputs[4];
    Strided Do = strided(Dor, Ptr(0, B * Dor.Strides[0]), Ops.InType[0]);
    Strided O = strided(Or, Ptr(4, B * Or.Strides[0]), Ops.InType[4]);
    attentionDeltaKernel<<<unsigned(A.Hq * A.T), Threads, 0, S>>>(
        Do, O, A.T, A.Dv, Delta);
    // dP = dO V^T into the scores' place.
    for (int64_t Gq = 0; Gq < G; ++Gq)
      TRY_CUBLAS(gemm(C.Cublas, false, true, A.T, A.Sk, A.Dv, 1.0f,
                      Ptr(0, B * Dor.Strides[0] + Gq * Dor.Strides[1]), Act,
                      Dor.Strides[2], G * Dor.Strides[1],
                      Ptr(Qi + 2, B * Vr.Strides[0]), Act, Vr.Strides[2],
                      Vr.Strides[1], 0.0f, Scores + Gq * A.T * A.Sk,
                      ElementType::F32, A.Sk, G * A.T * A.Sk, A.Hkv));
    attentionDsKernel<<<unsigned(A.Hq * A.T), Threads, 0, S>>>(
        P, Act, Scores, Delta, Ds, Act, A.Sk, A.Scale);
    const plan::TensorRef &DqR = K.Outputs[0], &DkR = K.Outputs[1],
                          &DvR = K.Outputs[2];
    char *Dq = static_cast<char *>(Ops.Out[0]), *Dk = static_cast<char *>(Ops.Out[1]),
         *Dv = static_cast<char *>(Ops.Out[2]);
    for (int64_t Gq = 0; Gq < G; ++Gq) {
      float Beta = Gq ? 1.0f : 0.0f; // Key/value heads sum their group.
      // dQ = dS K
      TRY_CUBLAS(gemm(C.Cublas, false, false, A.T, A.D, A.Sk, 1.0f,
                      static_cast<char *>(Ds) + Gq * A.T * A.Sk * EB, Act,
                      A.Sk, G * A.T * A.Sk, Ptr(Qi + 1, B * Kr.Strides[0]),
                      Act, Kr.Strides[2], Kr.Strides[1], 0.0f,
                      Dq + (B * DqR.Strides[0] + Gq * DqR.Strides[1]) * EB,
                      Act, DqR.Strides[2], G * DqR.Strides[1], A.Hkv));
      // dK += dS^T Q
      TRY_CUBLAS(gemm(C.Cublas, true, false, A.Sk, A.D, A.T, 1.0f,
                      static_cast<char *>(Ds) + Gq * A.T * A.Sk * EB, Act,
                      A.Sk, G * A.T * A.Sk,
                      Ptr(Qi, B * Qr.Strides[0] + Gq * Qr.Strides[1]), Act,
                      Qr.Strides[2], G * Qr.Strides[1], Beta,
                      Dk + B * DkR.Strides[0] * EB, Act, DkR.Strides[2],
                      DkR.Strides[1], A.Hkv));
      // dV += P^T dO
      TRY_CUBLAS(gemm(C.Cublas, true, false, A.Sk, A.Dv, A.T, 1.0f,
                      static_cast<char *>(P) + Gq * A.T * A.Sk * EB, Act,
                      A.Sk, G * A.T * A.Sk,
                      Ptr(0, B * Dor.Strides[0] + Gq * Dor.Strides[1]), Act,
                      Dor.Strides[2], G * Dor.Strides[1], Beta,
                      Dv + B * DvR.Strides[0] * EB, Act, DvR.Strides[2],
                      DvR.Strides[1], A.Hkv));
    }
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Gather and its gradient
//===----------------------------------------------------------------------===//

__device__ int64_t loadIndex(const void *P, uint64_t I, ElementType T) {
  return T == ElementType::I64 ? static_cast<const int64_t *>(P)[I]
                               : int64_t(static_cast<const int32_t *>(P)[I]);
}

__global__ void gatherKernel(const void *X, ElementType XT, const void *Idx,
                             ElementType IT, void *Out, ElementType OT,
                             int64_t Outer, int64_t Dim, int64_t Inner,
                             int64_t Count) {
  int64_t N = Outer * Count * Inner;
  for (int64_t E = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; E < N;
       E += int64_t(gridDim.x) * blockDim.x) {
    int64_t I = E % Inner, J = (E / Inner) % Count, O = E / (Inner * Count);
    int64_t K = loadIndex(Idx, uint64_t(J), IT);
    if (K < 0)
      K += Dim;
    float V = K >= 0 && K < Dim ? loadAs(X, uint64_t((O * Dim + K) * Inner + I), XT)
                                : 0.0f;
    storeAs(Out, uint64_t(E), OT, V);
  }
}

__global__ void iotaKeysKernel(const void *Idx, ElementType IT, int64_t Dim,
                               int32_t *Keys, int32_t *Positions,
                               int64_t Count) {
  for (int64_t J = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; J < Count;
       J += int64_t(gridDim.x) * blockDim.x) {
    int64_t K = loadIndex(Idx, uint64_t(J), IT);
    Keys[J] = int32_t(K < 0 ? K + Dim : K);
    Positions[J] = int32_t(J);
  }
}

/// Rows of the table: run R of equal sorted ids (its id Unique[R], its
/// positions Sorted[Offset[R] .. + Length[R]]) sums their gradients in
/// position order. The bounds are known before the loop, so a long run
/// (a common token: hundreds of positions) has its loads in flight
/// together; testing each next id as the loop went made it one load at a
/// time.
__global__ void runScatterKernel(const int32_t *Unique, const int32_t *Offset,
                                 const int32_t *Length, const int32_t *Runs,
                                 const int32_t *Positions, const void *Dout,
                                 ElementType DT, void *Dx, ElementType XT,
                                 int64_t Dim, int64_t Inner) {
  int64_t N = int64_t(*Runs) * Inner;
  for (int64_t E = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; E < N;
       E += int64_t(gridDim.x) * blockDim.x) {
    int64_t Run = E / Inner, I = E % Inner;
    int32_t Key = Unique[Run];
    if (Key < 0 || Key >= Dim)
      continue;
    int64_t Begin = Offset[Run], End = Begin + Length[Run];
    float Sum = 0;
#pragma unroll 8
    for (int64_t R = Begin; R < End; ++R)
      Sum += loadAs(Dout, uint64_t(Positions[R]) * Inner + I, DT);
    storeAs(Dx, uint64_t(Key) * Inner + I, XT, Sum);
  }
}

/// A gather along an inner axis (a ViT's class token): every element of
/// the table sums the few positions that read it. Count is small there.
__global__ void gatherGradDirectKernel(const void *Idx, ElementType IT,
                                       const void *Dout, ElementType DT,
                                       void *Dx, ElementType XT, int64_t Outer,
                                       int64_t Dim, int64_t Inner,
                                       int64_t Count) {
  int64_t N = Outer * Dim * Inner;
  for (int64_t E = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; E < N;
       E += int64_t(gridDim.x) * blockDim.x) {
    int64_t I = E % Inner, D = (E / Inner) % Dim, O = E / (Inner * Dim);
    float Sum = 0;
    for (int64_t J = 0; J < Count; ++J) {
      int64_t K = loadIndex(Idx, uint64_t(J), IT);
      if ((K < 0 ? K + Dim : K) == D)
        Sum += loadAs(Dout, uint64_t((O * Count + J) * Inner + I), DT);
    }
    storeAs(Dx, uint64_t(E), XT, Sum);
  }
}

/// Scratch of cub's sort, run-length encoding and scan for Count ids.
size_t cubTempBytes(int64_t Count) {
  size_t Sort = 0, Encode = 0, Scan = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, Sort, (int32_t *)nullptr,
                                  (int32_t *)nullptr, (int32_t *)nullptr,
                                  (int32_t *)nullptr, int(Count));
  cub::DeviceRunLengthEncode::Encode(nullptr, Encode, (int32_t *)nullptr,
                                     (int32_t *)nullptr, (int32_t *)nullptr,
                                     (int32_t *)nullptr, int(Count));
  cub::DeviceScan::ExclusiveSum(nullptr, Scan, (int32_t *)nullptr,
                                (int32_t *)nullptr, int(Count));
  return std::max({Sort, Encode, Scan});
}

/// Keys and positions, unsorted and sorted, each run's id, offset and
/// length, the run count, and cub's scratch, 256-byte aligned (dsc's
/// planner reserves 40 bytes per id and a MiB).
uint64_t sortBytes(int64_t Count) {
  return uint64_t(Count) * 28 + 16 + cubTempBytes(Count) + 256;
}

std::string gather(const plan::Kernel &K, const KernelOperands &Ops,
                   const KernelContext &C, cudaStream_t S) {
  int64_t Outer = K.Ints[1], Dim = K.Ints[2], Inner = K.Ints[3],
          Count = K.Ints[4];
  if (K.Kind == KernelKind::Gather) {
    uint64_t N = uint64_t(Outer * Count * Inner);
    if (N)
      gatherKernel<<<blocksFor(N), Threads, 0, S>>>(
          Ops.In[0], Ops.InType[0], Ops.In[1], Ops.InType[1], Ops.Out[0],
          Ops.OutType[0], Outer, Dim, Inner, Count);
    return "";
  }
  if (Outer != 1) {
    uint64_t N = uint64_t(Outer * Dim * Inner);
    if (N)
      gatherGradDirectKernel<<<blocksFor(N), Threads, 0, S>>>(
          Ops.In[0], Ops.InType[0], Ops.In[1], Ops.InType[1], Ops.Out[0],
          Ops.OutType[0], Outer, Dim, Inner, Count);
    return "";
  }
  uint64_t Need = sortBytes(Count);
  if (Need > C.WorkspaceBytes)
    return "an embedding's gradient needs " + std::to_string(Need) +
           " bytes of workspace; the plan has " +
           std::to_string(C.WorkspaceBytes);
  char *W = static_cast<char *>(C.Workspace);
  int32_t *KeysIn = reinterpret_cast<int32_t *>(W);
  int32_t *KeysOut = KeysIn + Count, *PosIn = KeysOut + Count,
          *PosOut = PosIn + Count, *Unique = PosOut + Count,
          *Length = Unique + Count, *Offset = Length + Count,
          *Runs = Offset + Count;
  // cub's scratch starts 256-byte aligned.
  void *Temp = reinterpret_cast<void *>(
      (reinterpret_cast<uintptr_t>(Runs + 4) + 255) / 256 * 256);
  size_t TempBytes = cubTempBytes(Count);
  cudaMemsetAsync(Ops.Out[0], 0,
                  uint64_t(Dim * Inner) * elementBytes(Ops.OutType[0]), S);
  if (!Count)
    return "";
  iotaKeysKernel<<<blocksFor(uint64_t(Count)), Threads, 0, S>>>(
      Ops.In[0], Ops.InType[0], Dim, KeysIn, PosIn, Count);
  if (cub::DeviceRadixSort::SortPairs(Temp, TempBytes, KeysIn, KeysOut, PosIn,
                                      PosOut, int(Count), 0, 32,
                                      S) != cudaSuccess ||
      cub::DeviceRunLengthEncode::Encode(Temp, TempBytes, KeysOut, Unique,
                                         Length, Runs, int(Count),
                                         S) != cudaSuccess ||
      cub::DeviceScan::ExclusiveSum(Temp, TempBytes, Length, Offset,
                                    int(Count), S) != cudaSuccess)
    return "sorting the token ids of an embedding's gradient failed";
  runScatterKernel<<<blocksFor(uint64_t(Count * Inner)), Threads, 0, S>>>(
      Unique, Offset, Length, Runs, PosOut, Ops.In[1], Ops.InType[1],
      Ops.Out[0], Ops.OutType[0], Dim, Inner);
  return "";
}

//===----------------------------------------------------------------------===//
// Cross entropy
//===----------------------------------------------------------------------===//

// Logits rows are Ld apart (padded to a multiple of 8 where the plan made
// them so), the gradient's LdD.
/// Eight elements from element I of Base (I a multiple of 8, Base 16-byte
/// aligned): one 16-byte load for 16-bit types, two for fp32.
__device__ __forceinline__ void load8(const void *Base, uint64_t I,
                                      ElementType T, float *Out) {
  if (T == ElementType::F32) {
    const float4 *P = reinterpret_cast<const float4 *>(
        static_cast<const float *>(Base) + I);
    float4 A = P[0], B = P[1];
    Out[0] = A.x, Out[1] = A.y, Out[2] = A.z, Out[3] = A.w;
    Out[4] = B.x, Out[5] = B.y, Out[6] = B.z, Out[7] = B.w;
    return;
  }
  uint4 V = *reinterpret_cast<const uint4 *>(
      static_cast<const uint16_t *>(Base) + I);
  uint32_t W[4] = {V.x, V.y, V.z, V.w};
#pragma unroll
  for (int K = 0; K < 8; ++K) {
    uint16_t H = uint16_t(W[K / 2] >> (16 * (K % 2)));
    Out[K] = T == ElementType::BF16 ? fromBF16(H) : fromFP16(H);
  }
}

/// Eight elements to element I of Base, as load8 reads them.
__device__ __forceinline__ void store8(void *Base, uint64_t I, ElementType T,
                                       const float *In) {
  if (T == ElementType::F32) {
    float4 *P = reinterpret_cast<float4 *>(static_cast<float *>(Base) + I);
    P[0] = make_float4(In[0], In[1], In[2], In[3]);
    P[1] = make_float4(In[4], In[5], In[6], In[7]);
    return;
  }
  uint32_t W[4];
#pragma unroll
  for (int K = 0; K < 4; ++K) {
    uint16_t Lo = T == ElementType::BF16 ? toBF16(In[2 * K]) : toFP16(In[2 * K]);
    uint16_t Hi =
        T == ElementType::BF16 ? toBF16(In[2 * K + 1]) : toFP16(In[2 * K + 1]);
    W[K] = uint32_t(Lo) | uint32_t(Hi) << 16;
  }
  *reinterpret_cast<uint4 *>(static_cast<uint16_t *>(Base) + I) =
      make_uint4(W[0], W[1], W[2], W[3]);
}

/// Whether rows Ld elements apart from P can be read 8 at a time.
bool rowsOf8(const void *P, ElementType T, int64_t Ld) {
  return Ld % 8 == 0 && reinterpret_cast<uintptr_t>(P) % 16 == 0 &&
         (T == ElementType::F32 || T == ElementType::BF16 ||
          T == ElementType::F16);
}

/// A running log-sum-exp (max M, sum S of exp(x - M)) and more elements.
__device__ __forceinline__ void addToLse(float &M, float &S, const float *X,
                                         int N) {
  float Top = M;
  for (int K = 0; K < N; ++K)
    Top = fmaxf(Top, X[K]);
  if (Top == -INFINITY)
    return;
  S *= expf(M - Top);
  for (int K = 0; K < N; ++K)
    S += expf(X[K] - Top);
  M = Top;
}
__device__ __forceinline__ void mergeLse(float &M, float &S, float M2,
                                         float S2) {
  float Top = fmaxf(M, M2);
  if (Top == -INFINITY)
    return;
  S = S * expf(M - Top) + S2 * expf(M2 - Top);
  M = Top;
}

/// Each row's log-sum-exp in one pass over the logits (an online max and
/// sum per thread, merged over the block), 8 elements per load where the
/// rows allow: the vocabulary's row is read once, not twice.
__global__ void lseKernel(const void *X, ElementType XT, float *Lse,
                          int64_t V, int64_t Ld, bool Vec) {
  uint64_t Row = uint64_t(blockIdx.x) * uint64_t(Ld);
  float M = -INFINITY, S = 0;
  int64_t Scalar = 0;
  if (Vec) {
    Scalar = V / 8 * 8;
    for (int64_t C = threadIdx.x * 8; C < Scalar; C += blockDim.x * 8) {
      float Y[8];
      load8(X, Row + C, XT, Y);
      addToLse(M, S, Y, 8);
    }
  }
  for (int64_t C = Scalar + threadIdx.x; C < V; C += blockDim.x) {
    float Y = loadAs(X, Row + C, XT);
    addToLse(M, S, &Y, 1);
  }
  for (int O = 16; O > 0; O /= 2) {
    float M2 = __shfl_xor_sync(0xffffffffu, M, O),
          S2 = __shfl_xor_sync(0xffffffffu, S, O);
    mergeLse(M, S, M2, S2);
  }
  __shared__ float Ms[32], Ss[32];
  int Lane = threadIdx.x % 32, Warp = threadIdx.x / 32;
  if (Lane == 0)
    Ms[Warp] = M, Ss[Warp] = S;
  __syncthreads();
  if (threadIdx.x == 0) {
    float Mt = -INFINITY, St = 0;
    for (int W = 0; W < int(blockDim.x + 31) / 32; ++W)
      mergeLse(Mt, St, Ms[W], Ss[W]);
    Lse[blockIdx.x] = Mt + logf(St);
  }
}

/// One block: the mean loss over the rows whose target counts.
__global__ void lossKernel(const void *X, ElementType XT, const void *T,
                           ElementType TT, const float *Lse, float *Loss,
                           int64_t Rows, int64_t V, int64_t Ld,
                           int64_t Ignore) {
  float Sum = 0, Count = 0;
  for (int64_t R = threadIdx.x; R < Rows; R += blockDim.x) {
    int64_t Tg = loadIndex(T, uint64_t(R), TT);
    if (Tg == Ignore || Tg < 0 || Tg >= V)
      continue;
    Sum += Lse[R] - loadAs(X, uint64_t(R * Ld + Tg), XT);
    Count += 1;
  }
  Sum = blockReduce(Sum, false);
  Count = blockReduce(Count, false);
  if (threadIdx.x == 0)
    *Loss = Count > 0 ? Sum / Count : 0.0f;
}

__global__ void countTargetsKernel(const void *T, ElementType TT, int64_t Rows,
                                   int64_t Ignore, float *Count) {
  float N = 0;
  for (int64_t R = threadIdx.x; R < Rows; R += blockDim.x)
    N += loadIndex(T, uint64_t(R), TT) != Ignore;
  N = blockReduce(N, false);
  if (threadIdx.x == 0)
    *Count = N;
}

__global__ void crossEntropyGradKernel(const void *X, ElementType XT,
                                       const void *T, ElementType TT,
                                       const float *Lse, const float *Dloss,
                                       const float *Count,
                                       const float *LossScale, void *D,
                                       ElementType DT, int64_t V, int64_t Ld,
                                       int64_t LdD, int64_t Ignore, bool Vec) {
  int64_t R = blockIdx.x;
  uint64_t Row = uint64_t(R * Ld), RowD = uint64_t(R * LdD);
  int64_t Tg = loadIndex(T, uint64_t(R), TT);
  bool Counts = Tg != Ignore && *Count > 0;
  float Scale = Counts ? *Dloss / *Count : 0.0f;
  if (LossScale)
    Scale *= *LossScale;
  float L = Lse[R];
  int64_t Scalar = 0;
  if (Vec) {
    Scalar = V / 8 * 8;
    for (int64_t C = threadIdx.x * 8; C < Scalar; C += blockDim.x * 8) {
      float Y[8];
      load8(X, Row + C, XT, Y);
#pragma unroll
      for (int K = 0; K < 8; ++K)
        Y[K] = Counts ? (expf(Y[K] - L) - float(C + K == Tg)) * Scale : 0.0f;
      store8(D, RowD + C, DT, Y);
    }
  }
  for (int64_t C = Scalar + threadIdx.x; C < V; C += blockDim.x) {
    float G = Counts ? (expf(loadAs(X, Row + C, XT) - L) - float(C == Tg)) *
                           Scale
                     : 0.0f;
    storeAs(D, RowD + C, DT, G);
  }
}

std::string crossEntropy(const plan::Kernel &K, const KernelOperands &Ops,
                         const KernelContext &C, cudaStream_t S) {
  int64_t Rows = K.Ints[0], V = K.Ints[1], Ignore = K.Ints[2];
  int64_t Ld = plan::rowStride(K.Inputs[0].Shape, K.Inputs[0].Strides);
  if (!Rows)
    return "";
  if (K.Kind == KernelKind::CrossEntropy) {
    float *Lse = static_cast<float *>(Ops.Out[1]);
    lseKernel<<<unsigned(Rows), Threads, 0, S>>>(
        Ops.In[0], Ops.InType[0], Lse, V, Ld,
        rowsOf8(Ops.In[0], Ops.InType[0], Ld));
    lossKernel<<<1, 1024, 0, S>>>(Ops.In[0], Ops.InType[0], Ops.In[1],
                                  Ops.InType[1], Lse,
                                  static_cast<float *>(Ops.Out[0]), Rows, V,
                                  Ld, Ignore);
    return "";
  }
  if (C.WorkspaceBytes < sizeof(float))
    return "the cross entropy's gradient needs 4 bytes of workspace";
  float *Count = static_cast<float *>(C.Workspace);
  int64_t LdD = plan::rowStride(K.Outputs[0].Shape, K.Outputs[0].Strides);
  countTargetsKernel<<<1, 1024, 0, S>>>(Ops.In[1], Ops.InType[1], Rows, Ignore,
                                        Count);
  crossEntropyGradKernel<<<unsigned(Rows), Threads, 0, S>>>(
      Ops.In[0], Ops.InType[0], Ops.In[1], Ops.InType[1],
      static_cast<const float *>(Ops.In[2]),
      static_cast<const float *>(Ops.In[3]), Count, C.LossScale, Ops.Out[0],
      Ops.OutType[0], V, Ld, LdD, Ignore,
      rowsOf8(Ops.In[0], Ops.InType[0], Ld) &&
          rowsOf8(Ops.Out[0], Ops.OutType[0], LdD) &&
          Ops.InType[0] == Ops.OutType[0]);
  return "";
}

/// A bias gradient cuBLASLt's epilogue could not give: element J of
/// Out sums row J of op(A) (OfA) or column J of op(B) over K, in order.
__global__ void operandSumsKernel(const void *X, ElementType T, bool OfA,
                                  bool Trans, int64_t Ld, int64_t Len,
                                  int64_t K, void *Out) {
  for (int64_t J = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; J < Len;
       J += int64_t(gridDim.x) * blockDim.x) {
    float Sum = 0;
    for (int64_t L = 0; L < K; ++L)
      Sum += loadAs(X, uint64_t(OfA == Trans ? L * Ld + J : J * Ld + L), T);
    storeAs(Out, uint64_t(J), T, Sum);
  }
}

std::string matmul(const plan::Kernel &K, const KernelOperands &Ops,
                   const KernelContext &C, cudaStream_t S) {
  auto E = plan::GemmEpilogue(K.Ints[12]);
  bool Bias = E == plan::GemmEpilogue::Bias ||
              E == plan::GemmEpilogue::BiasGeluTanh;
  bool BiasGrad = E == plan::GemmEpilogue::BiasGradA ||
                  E == plan::GemmEpilogue::BiasGradB;
  // GELU's pre-activation: the forward's second output, the backward's
  // third input.
  void *Aux = E == plan::GemmEpilogue::BiasGeluTanh ? Ops.Out[1]
              : E == plan::GemmEpilogue::DGeluTanh  ? Ops.In[2]
                                                    : nullptr;
  for (size_t I = 0; I < Ops.InType.size(); ++I)
    if (Ops.InType[I] != Ops.OutType[0])
      return "a GEMM of operands of different element types";
  for (ElementType T : Ops.OutType)
    if (T != Ops.OutType[0])
      return "a GEMM of operands of different element types";
  if (!C.Products)
    return "no cuBLASLt handle for the products";
  bool Separate = false;
  const void *BiasPtr = Bias ? Ops.In[2] : BiasGrad ? Ops.Out[1] : nullptr;
  if (std::string Problem = C.Products->run(
          K, Ops.In[0], Ops.In[1], BiasPtr, Aux, Ops.Out[0], Ops.OutType[0],
          C.Workspace, std::min(C.WorkspaceBytes, plan::GemmWorkspaceBytes), S,
          Separate);
      !Problem.empty())
    return Problem;
  if (BiasGrad && Separate) {
    const std::vector<int64_t> &I = K.Ints;
    bool OfA = E == plan::GemmEpilogue::BiasGradA;
    int64_t Len = OfA ? I[0] : I[1];
    operandSumsKernel<<<blocksFor(uint64_t(Len)), Threads, 0, S>>>(
        Ops.In[OfA ? 0 : 1], Ops.InType[OfA ? 0 : 1], OfA, I[OfA ? 4 : 5] != 0,
        I[OfA ? 6 : 7], Len, I[2], Ops.Out[1]);
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Rotary position embeddings
//===----------------------------------------------------------------------===//

struct RotaryArgs {
  Strided X, Cos, Sin, Y;
  int64_t Pairs = 0, Half = 0;
  bool Backward = false;
};

/// One thread per pair (i, i + h) of a row, h half the row: each operand
/// through its own strides (a view of q or k as attention reads them, the
/// tables broadcast), in fp32. Forward y[i] = x[i] c[i] - x[i+h] s[i],
/// y[i+h] = x[i+h] c[i+h] + x[i] s[i+h]; backward the transpose,
/// dx[i] = g[i] c[i] + g[i+h] s[i+h], dx[i+h] = g[i+h] c[i+h] - g[i] s[i].
__global__ void rotaryKernel(const __grid_constant__ RotaryArgs A) {
  const int Last = A.Y.Rank - 1;
  const Strided *Ops[4] = {&A.X, &A.Cos, &A.Sin, &A.Y};
  for (int64_t P = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       P < A.Pairs; P += int64_t(gridDim.x) * blockDim.x) {
    int64_t I = P % A.Half, Rest = P / A.Half;
    int64_t Off[4], Next[4];
    for (int J = 0; J < 4; ++J)
      Off[J] = I * Ops[J]->Strides[Last];
    for (int D = Last - 1; D >= 0; --D) {
      int64_t Size = A.Y.Shape[D] ? A.Y.Shape[D] : 1;
      int64_t Index = Rest % Size;
      Rest /= Size;
      for (int J = 0; J < 4; ++J)
        Off[J] += Index * Ops[J]->Strides[D];
    }
    for (int J = 0; J < 4; ++J)
      Next[J] = Off[J] + A.Half * Ops[J]->Strides[Last];
    float Xa = loadAs(A.X.Ptr, Off[0], A.X.Type),
          Xb = loadAs(A.X.Ptr, Next[0], A.X.Type);
    float Ca = loadAs(A.Cos.Ptr, Off[1], A.Cos.Type),
          Cb = loadAs(A.Cos.Ptr, Next[1], A.Cos.Type);
    float Sa = loadAs(A.Sin.Ptr, Off[2], A.Sin.Type),
          Sb = loadAs(A.Sin.Ptr, Next[2], A.Sin.Type);
    float Ya = A.Backward ? Xa * Ca + Xb * Sb : Xa * Ca - Xb * Sa;
    float Yb = A.Backward ? Xb * Cb - Xa * Sa : Xb * Cb + Xa * Sb;
    storeAs(A.Y.Ptr, Off[3], A.Y.Type, Ya);
    storeAs(A.Y.Ptr, Next[3], A.Y.Type, Yb);
  }
}

std::string rotary(const plan::Kernel &K, const KernelOperands &Ops,
                   cudaStream_t S) {
  RotaryArgs A;
  A.X = strided(K.Inputs[0], Ops.In[0], Ops.InType[0]);
  A.Cos = strided(K.Inputs[1], Ops.In[1], Ops.InType[1]);
  A.Sin = strided(K.Inputs[2], Ops.In[2], Ops.InType[2]);
  A.Y = strided(K.Outputs[0], Ops.Out[0], Ops.OutType[0]);
  if (A.Y.Rank < 1 || A.Y.Rank > MaxRank)
    return "a rotary embedding of rank " + std::to_string(A.Y.Rank);
  A.Half = K.Ints[1] / 2;
  A.Pairs = K.Ints[0] * A.Half;
  A.Backward = K.Kind == KernelKind::RotaryGrad;
  if (A.Pairs)
    rotaryKernel<<<blocksFor(uint64_t(A.Pairs)), Threads, 0, S>>>(A);
  return "";
}

//===----------------------------------------------------------------------===//
// SwiGLU's gate
//===----------------------------------------------------------------------===//

/// Operands g, u (forward) or dy, g, u (backward), then y or dg, du.
struct SwiGLUArgs {
  Strided Op[5];
  int Ins = 2, Outs = 1;
  int64_t N = 0;
};

/// Forward y = g s u with s = sigmoid(g); backward dg = dy u s (1 + g (1 -
/// s)), du = dy g s. In fp32 from the operands as stored, one rounding at
/// each store; s is recomputed rather than kept from the forward.
__device__ __forceinline__ void swigluMath(const float *In, float *Out,
                                           bool Grad) {
  float G = In[Grad], U = In[Grad + 1];
  float S = 1.0f / (1.0f + __expf(-G));
  if (!Grad) {
    Out[0] = G * S * U;
    return;
  }
  float Dy = In[0];
  Out[0] = Dy * U * S * (1.0f + G * (1.0f - S));
  Out[1] = Dy * G * S;
}

/// Dense operands, eight elements a thread (16 bytes of a 16-bit operand).
template <bool Grad>
__global__ void swiglu8Kernel(const __grid_constant__ SwiGLUArgs A) {
  constexpr int Ins = Grad ? 3 : 2, Outs = Grad ? 2 : 1;
  for (int64_t V = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       V < A.N / 8; V += int64_t(gridDim.x) * blockDim.x) {
    float In[Ins][8], Out[Outs][8];
#pragma unroll
    for (int J = 0; J < Ins; ++J)
      load8(A.Op[J].Ptr, uint64_t(V) * 8, A.Op[J].Type, In[J]);
#pragma unroll
    for (int E = 0; E < 8; ++E) {
      float I[Ins], O[Outs];
#pragma unroll
      for (int J = 0; J < Ins; ++J)
        I[J] = In[J][E];
      swigluMath(I, O, Grad);
#pragma unroll
      for (int J = 0; J < Outs; ++J)
        Out[J][E] = O[J];
    }
#pragma unroll
    for (int J = 0; J < Outs; ++J)
      store8(A.Op[Ins + J].Ptr, uint64_t(V) * 8, A.Op[Ins + J].Type, Out[J]);
  }
}

/// Any views: each element's offset from its index, operand by operand.
template <bool Grad>
__global__ void swigluStridedKernel(const __grid_constant__ SwiGLUArgs A) {
  constexpr int Ins = Grad ? 3 : 2, Outs = Grad ? 2 : 1;
  const Strided &Shape = A.Op[Ins];
  for (int64_t E = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; E < A.N;
       E += int64_t(gridDim.x) * blockDim.x) {
    int64_t Off[Ins + Outs] = {}, Rest = E;
    for (int D = Shape.Rank - 1; D >= 0; --D) {
      int64_t Size = Shape.Shape[D] ? Shape.Shape[D] : 1;
      int64_t Index = Rest % Size;
      Rest /= Size;
#pragma unroll
      for (int J = 0; J < Ins + Outs; ++J)
        Off[J] += Index * A.Op[J].Strides[D];
    }
    float I[Ins], O[Outs];
#pragma unroll
    for (int J = 0; J < Ins; ++J)
      I[J] = loadAs(A.Op[J].Ptr, Off[J], A.Op[J].Type);
    swigluMath(I, O, Grad);
#pragma unroll
    for (int J = 0; J < Outs; ++J)
      storeAs(A.Op[Ins + J].Ptr, Off[Ins + J], A.Op[Ins + J].Type, O[J]);
  }
}

/// Whether R covers its shape densely in row-major order from P, 16-byte
/// aligned (dims of extent 1 may have any stride).
bool dense8(const plan::TensorRef &R, const void *P) {
  int64_t Expected = 1;
  for (size_t D = R.Shape.size(); D-- > 0;) {
    if (R.Shape[D] != 1 && R.Strides[D] != Expected)
      return false;
    Expected *= R.Shape[D];
  }
  return reinterpret_cast<uintptr_t>(P) % 16 == 0;
}

std::string swiglu(const plan::Kernel &K, const KernelOperands &Ops,
                   cudaStream_t S) {
  bool Grad = K.Kind == KernelKind::SwiGLUGrad;
  SwiGLUArgs A;
  A.Ins = Grad ? 3 : 2;
  A.Outs = Grad ? 2 : 1;
  A.N = numel(K.Outputs[0].Shape);
  if (K.Outputs[0].Shape.size() > size_t(MaxRank))
    return "a SwiGLU of rank " + std::to_string(K.Outputs[0].Shape.size());
  bool Dense = A.N % 8 == 0;
  for (int J = 0; J < A.Ins + A.Outs; ++J) {
    bool In = J < A.Ins;
    const plan::TensorRef &R = In ? K.Inputs[J] : K.Outputs[J - A.Ins];
    void *P = In ? Ops.In[J] : Ops.Out[J - A.Ins];
    A.Op[J] = strided(R, P, In ? Ops.InType[J] : Ops.OutType[J - A.Ins]);
    Dense = Dense && dense8(R, P);
  }
  if (!A.N)
    return "";
  if (Dense && Grad)
    swiglu8Kernel<true><<<blocksFor(uint64_t(A.N / 8)), Threads, 0, S>>>(A);
  else if (Dense)
    swiglu8Kernel<false><<<blocksFor(uint64_t(A.N / 8)), Threads, 0, S>>>(A);
  else if (Grad)
    swigluStridedKernel<true><<<blocksFor(uint64_t(A.N)), Threads, 0, S>>>(A);
  else
    swigluStridedKernel<false><<<blocksFor(uint64_t(A.N)), Threads, 0, S>>>(A);
  return "";
}

} // namespace

uint64_t kernelWorkspaceBytes(const plan::Kernel &K,
                              const KernelOperands &Ops) {
  switch (K.Kind) {
  case KernelKind::Gemm:
    return plan::GemmWorkspaceBytes;
  case KernelKind::Attention:
  case KernelKind::AttentionGrad:
    return plan::attentionWorkspace(
        K, elementBytes(Ops.InType[K.Kind == KernelKind::Attention ? 0 : 1]));
  case KernelKind::GatherGrad:
    return K.Ints[1] == 1 ? sortBytes(K.Ints[4]) : 0;
  case KernelKind::CrossEntropyGrad:
    return sizeof(float);
  case KernelKind::LayerNormGrad:
  case KernelKind::RMSNormGrad:
    return dsc::columnSumWorkspace(K.Ints[0], K.Ints[1],
                                   K.Kind == KernelKind::LayerNormGrad ? 2 : 1);
  case KernelKind::Reduce: {
    int64_t Rows = 0, Cols = 0;
    const plan::TensorRef &X = K.Inputs[0];
    return dsc::reducesLeadingRows(X.Shape, X.Strides, K.Ints[0], Rows, Cols)
               ? dsc::columnSumWorkspace(Rows, Cols, 1)
               : 0;
  }
  default:
    return 0;
  }
}

std::string launchComputeKernel(const plan::Kernel &K,
                                const KernelOperands &Ops,
                                const KernelContext &C, cudaStream_t S) {
  switch (K.Kind) {
  case KernelKind::Gemm:
    return matmul(K, Ops, C, S);
  case KernelKind::Pointwise:
    return pointwise(K, Ops, C, S);
  case KernelKind::Fill: {
    int64_t N = numel(K.Outputs[0].Shape);
    if (N)
      fillKernel<<<blocksFor(uint64_t(N)), Threads, 0, S>>>(
          strided(K.Outputs[0], Ops.Out[0], Ops.OutType[0]), N,
          float(K.Floats[0]));
    return "";
  }
  case KernelKind::Reduce:
    return reduce(K, Ops, C, S);
  case KernelKind::Softmax:
    if (K.Ints[0])
      softmaxKernel<<<unsigned(K.Ints[0]), Threads, 0, S>>>(
          Ops.In[0], Ops.InType[0], Ops.Out[0], Ops.OutType[0], K.Ints[1],
          K.Ints[3] != 0, K.Ints[2] != 0);
    return "";
  case KernelKind::SoftmaxGrad:
    if (K.Ints[0])
      softmaxGradKernel<<<unsigned(K.Ints[0]), Threads, 0, S>>>(
          Ops.In[0], Ops.InType[0], Ops.In[1], Ops.InType[1], Ops.Out[0],
          Ops.OutType[0], K.Ints[1], K.Ints[2] != 0);
    return "";
  case KernelKind::LayerNorm:
  case KernelKind::LayerNormGrad:
  case KernelKind::RMSNorm:
  case KernelKind::RMSNormGrad:
    return norm(K, Ops, C, S);
  case KernelKind::Attention:
  case KernelKind::AttentionGrad:
    if (K.Ints[8] == int64_t(plan::AttentionAlgorithm::Flash))
      return flashAttention(K, Ops, C, S);
    return attention(K, Ops, C, S);
  case KernelKind::Gather:
  case KernelKind::GatherGrad:
    return gather(K, Ops, C, S);
  case KernelKind::CrossEntropy:
  case KernelKind::CrossEntropyGrad:
    return crossEntropy(K, Ops, C, S);
  case KernelKind::Rotary:
  case KernelKind::RotaryGrad:
    return rotary(K, Ops, S);
  case KernelKind::SwiGLU:
  case KernelKind::SwiGLUGrad:
    return swiglu(K, Ops, S);
  }
  return "a kernel of a kind dsrun does not know";
}

} // namespace dsrun
