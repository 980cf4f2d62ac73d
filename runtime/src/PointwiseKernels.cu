//===- PointwiseKernels.cu - Pointwise programs, rotary, SwiGLU -----------===//
//
// Elementwise kinds: the plan's pointwise programs (fused chains of ONNX
// elementwise ops, interpreted per element), rotary position embeddings and
// SwiGLU's gate, forward and backward.
//
//===----------------------------------------------------------------------===//

#include "KernelSupport.cuh"
#include "FastDivmod.h"

#include "dsc/Pointwise.h"
#include "dsc/Random.h"

namespace dsrun {
namespace kernels {

using plan::KernelKind;
using plan::PointwiseOp;

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

/// Every operand dense and 16-byte aligned, N a multiple of 8: each
/// thread runs eight consecutive elements, a 16-bit operand one 16-byte
/// access, an fp32 one two. Two-byte accesses, four elements a thread, kept a plain add
/// of two [50257, 768] bf16 tensors at 513 GB/s on an H200.
template <typename Registers>
__global__ void pointwiseVectorKernel(const __grid_constant__ PointwiseArgs A) {
  uint64_t Groups = uint64_t(A.N) / 8;
  for (uint64_t G = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x;
       G < Groups; G += uint64_t(gridDim.x) * blockDim.x) {
    Registers R[8];
#pragma unroll
    for (int J = 0; J < (Registers::Size < 8 ? Registers::Size : 8); ++J)
      if (J < A.NumIn) {
        float V[8];
        load8(A.In[J].Ptr, G * 8, A.In[J].Type, V);
#pragma unroll
        for (int B = 0; B < 8; ++B)
          R[B].V[J] = V[B];
      }
    runProgramBatch<8>(A, int64_t(G * 8), 1, R);
#pragma unroll
    for (int J = 0; J < 4; ++J)
      if (J < A.NumOut) {
        float V[8];
#pragma unroll
        for (int B = 0; B < 8; ++B)
          V[B] = R[B].get(A.OutReg[J]);
        store8(A.Out[J].Ptr, G * 8, A.Out[J].Type, V);
      }
  }
}

/// Whether the vector kernel runs A: dense operands of float types, each
/// 16-byte aligned, a multiple of 8 elements.
static bool vectorizable(const PointwiseArgs &A) {
  bool Ok = A.Flat && A.N % 8 == 0;
  for (int J = 0; J < A.NumIn; ++J)
    Ok = Ok && dense(A.InDiv[J], A.InPeriod[J], A.N) &&
         rowsOf8(A.In[J].Ptr, A.In[J].Type, 8);
  for (int J = 0; J < A.NumOut; ++J)
    Ok = Ok && dense(A.OutDiv[J], A.OutPeriod[J], A.N) &&
         rowsOf8(A.Out[J].Ptr, A.Out[J].Type, 8);
  return Ok;
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
  const plan::PointwiseAttrs &P = K.attrs<KernelKind::Pointwise>();
  int64_t Regs = P.Registers, N = int64_t(P.Program.size());
  if (Regs > MaxRegisters || N > MaxInstructions ||
      P.Constants.size() > size_t(MaxConstants) || K.Inputs.size() > 8 ||
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
  for (int64_t J = 0; J < N; ++J) {
    const plan::PointwiseInstr &X = P.Program[size_t(J)];
    A.Code[J][0] = int16_t(X.Op);
    A.Code[J][1] = int16_t(X.Dest);
    A.Code[J][2] = int16_t(X.A);
    A.Code[J][3] = int16_t(X.B);
    A.Code[J][4] = int16_t(X.C);
  }
  for (int J = 0; J < A.NumOut; ++J)
    A.OutReg[J] = int(P.Results[size_t(J)]);
  for (size_t J = 0; J < P.Constants.size(); ++J)
    A.Constants[J] = float(P.Constants[J]);
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
  if (Registers <= 8 && vectorizable(A)) {
    unsigned VectorBlocks = blocksFor(uint64_t(A.N) / 8);
    if (Registers <= 4)
      pointwiseVectorKernel<SelectRegisters<4>><<<VectorBlocks, Threads, 0, S>>>(A);
    else
      pointwiseVectorKernel<SelectRegisters<8>><<<VectorBlocks, Threads, 0, S>>>(A);
  } else if (A.Flat) {
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
// Rotary position embeddings
//===----------------------------------------------------------------------===//

struct RotaryArgs {
  Strided X, Cos, Sin, Y;
  int64_t Pairs = 0, Half = 0;
  bool Backward = false;
};

/// Each operand's offset of row Row (the dims before the last), for X,
/// Cos, Sin and Y.
__device__ __forceinline__ void rotaryRow(const RotaryArgs &A, int64_t Row,
                                          int64_t (&Off)[4]) {
  const Strided *Ops[4] = {&A.X, &A.Cos, &A.Sin, &A.Y};
  for (int J = 0; J < 4; ++J)
    Off[J] = 0;
  for (int D = A.Y.Rank - 2; D >= 0; --D) {
    int64_t Size = A.Y.Shape[D] ? A.Y.Shape[D] : 1;
    int64_t Index = Row % Size;
    Row /= Size;
    for (int J = 0; J < 4; ++J)
      Off[J] += Index * Ops[J]->Strides[D];
  }
}

/// One pair: forward y[i] = x[i] c[i] - x[i+h] s[i], y[i+h] = x[i+h]
/// c[i+h] + x[i] s[i+h]; backward the transpose, dx[i] = g[i] c[i] +
/// g[i+h] s[i+h], dx[i+h] = g[i+h] c[i+h] - g[i] s[i]. Both kernels round
/// alike through this one expression.
__device__ __forceinline__ void rotatePair(bool Backward, float Xa, float Xb,
                                           float Ca, float Cb, float Sa,
                                           float Sb, float &Ya, float &Yb) {
  Ya = Backward ? Xa * Ca + Xb * Sb : Xa * Ca - Xb * Sa;
  Yb = Backward ? Xb * Cb - Xa * Sa : Xb * Cb + Xa * Sb;
}

/// One thread per pair (i, i + h) of a row, h half the row: each operand
/// through its own strides (a view of q or k as attention reads them, the
/// tables broadcast), in fp32.
__global__ void rotaryKernel(const __grid_constant__ RotaryArgs A) {
  const int Last = A.Y.Rank - 1;
  const Strided *Ops[4] = {&A.X, &A.Cos, &A.Sin, &A.Y};
  for (int64_t P = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       P < A.Pairs; P += int64_t(gridDim.x) * blockDim.x) {
    int64_t I = P % A.Half, Off[4], Next[4];
    rotaryRow(A, P / A.Half, Off);
    for (int J = 0; J < 4; ++J) {
      Off[J] += I * Ops[J]->Strides[Last];
      Next[J] = Off[J] + A.Half * Ops[J]->Strides[Last];
    }
    float Ya, Yb;
    rotatePair(A.Backward, loadAs(A.X.Ptr, Off[0], A.X.Type),
               loadAs(A.X.Ptr, Next[0], A.X.Type),
               loadAs(A.Cos.Ptr, Off[1], A.Cos.Type),
               loadAs(A.Cos.Ptr, Next[1], A.Cos.Type),
               loadAs(A.Sin.Ptr, Off[2], A.Sin.Type),
               loadAs(A.Sin.Ptr, Next[2], A.Sin.Type), Ya, Yb);
    storeAs(A.Y.Ptr, Off[3], A.Y.Type, Ya);
    storeAs(A.Y.Ptr, Next[3], A.Y.Type, Yb);
  }
}

/// rotaryKernel eight pairs a thread, when every operand's rows are
/// contiguous and start on 16 bytes (rotaryBy8): one 16-byte load or
/// store per operand and half row, and the offsets computed once for
/// eight pairs.
__global__ void rotary8Kernel(const __grid_constant__ RotaryArgs A) {
  const int64_t Groups = A.Half / VecElems;
  for (int64_t P = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       P < A.Pairs / VecElems; P += int64_t(gridDim.x) * blockDim.x) {
    int64_t I = (P % Groups) * VecElems, Off[4];
    rotaryRow(A, P / Groups, Off);
    for (int J = 0; J < 4; ++J)
      Off[J] += I;
    float Xa[VecElems], Xb[VecElems], Ca[VecElems], Cb[VecElems],
        Sa[VecElems], Sb[VecElems], Ya[VecElems], Yb[VecElems];
    load8(A.X.Ptr, uint64_t(Off[0]), A.X.Type, Xa);
    load8(A.X.Ptr, uint64_t(Off[0] + A.Half), A.X.Type, Xb);
    load8(A.Cos.Ptr, uint64_t(Off[1]), A.Cos.Type, Ca);
    load8(A.Cos.Ptr, uint64_t(Off[1] + A.Half), A.Cos.Type, Cb);
    load8(A.Sin.Ptr, uint64_t(Off[2]), A.Sin.Type, Sa);
    load8(A.Sin.Ptr, uint64_t(Off[2] + A.Half), A.Sin.Type, Sb);
#pragma unroll
    for (int K = 0; K < VecElems; ++K)
      rotatePair(A.Backward, Xa[K], Xb[K], Ca[K], Cb[K], Sa[K], Sb[K], Ya[K],
                 Yb[K]);
    store8(A.Y.Ptr, uint64_t(Off[3]), A.Y.Type, Ya);
    store8(A.Y.Ptr, uint64_t(Off[3] + A.Half), A.Y.Type, Yb);
  }
}

/// Whether rotary8Kernel can run: half rows of a multiple of eight, every
/// operand contiguous along the row with its other strides multiples of
/// eight (broadcast tables: 0), 16-byte aligned, of a floating type.
bool rotaryBy8(const RotaryArgs &A) {
  if (A.Half % VecElems)
    return false;
  const int Last = A.Y.Rank - 1;
  for (const Strided *O : {&A.X, &A.Cos, &A.Sin, &A.Y}) {
    if (O->Rank != A.Y.Rank || O->Strides[Last] != 1 ||
        reinterpret_cast<uintptr_t>(O->Ptr) % 16 ||
        !(O->Type == ElementType::F32 || O->Type == ElementType::BF16 ||
          O->Type == ElementType::F16))
      return false;
    for (int D = 0; D < Last; ++D)
      if (O->Strides[D] % VecElems)
        return false;
  }
  return true;
}

std::string rotary(const plan::Kernel &K, const KernelOperands &Ops,
                   const KernelContext &, cudaStream_t S) {
  RotaryArgs A;
  A.X = strided(K.Inputs[0], Ops.In[0], Ops.InType[0]);
  A.Cos = strided(K.Inputs[1], Ops.In[1], Ops.InType[1]);
  A.Sin = strided(K.Inputs[2], Ops.In[2], Ops.InType[2]);
  A.Y = strided(K.Outputs[0], Ops.Out[0], Ops.OutType[0]);
  if (A.Y.Rank < 1 || A.Y.Rank > MaxRank)
    return "a rotary embedding of rank " + std::to_string(A.Y.Rank);
  const plan::RotaryAttrs &R = *K.as<plan::RotaryAttrs>();
  A.Half = R.Cols / 2;
  A.Pairs = R.Rows * A.Half;
  A.Backward = K.kind() == KernelKind::RotaryGrad;
  if (A.Pairs && rotaryBy8(A))
    rotary8Kernel<<<blocksFor(uint64_t(A.Pairs / VecElems)), Threads, 0, S>>>(
        A);
  else if (A.Pairs)
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


std::string swiglu(const plan::Kernel &K, const KernelOperands &Ops,
                   const KernelContext &, cudaStream_t S) {
  bool Grad = K.kind() == KernelKind::SwiGLUGrad;
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

} // namespace kernels
} // namespace dsrun
