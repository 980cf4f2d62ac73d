//===- GemmTuning.cu - Each product of a plan under each algorithm --------===//

#include "GemmTuning.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <map>

namespace plan = dsc::plan;

namespace dsrun {

namespace {

#define TRY_CUDA(Call)                                                         \
  do {                                                                         \
    if (cudaError_t E_ = (Call); E_ != cudaSuccess)                            \
      return std::string(#Call " failed: ") + cudaGetErrorString(E_);          \
  } while (0)

/// Values in [-1, 1) from a hash of the index, stored as T.
__global__ void fillRandom(void *Out, uint64_t N, ElementType T) {
  for (uint64_t I = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; I < N;
       I += uint64_t(gridDim.x) * blockDim.x) {
    uint64_t H = (I + 1) * 0x9E3779B97F4A7C15ull;
    H ^= H >> 29;
    H *= 0xBF58476D1CE4E5B9ull;
    H ^= H >> 32;
    storeAs(Out, I, T, float(H & 0xFFFFFF) / float(1 << 23) - 1.0f);
  }
}

/// Elements a row-major operand of Rows x Cols at leading dimension Ld
/// spans, Batch of them Stride apart.
uint64_t extent(int64_t Rows, int64_t Cols, int64_t Ld, int64_t Batch,
                int64_t Stride) {
  return uint64_t((Batch - 1) * Stride + (Rows - 1) * Ld + Cols);
}

/// Elements each operand of G spans: A, B and C.
struct Extents {
  uint64_t A, B, C;
};
Extents extentsOf(const plan::GemmAttrs &G) {
  int64_t M = G.M, N = G.N, K = G.K;
  return {extent(G.TransA ? K : M, G.TransA ? M : K, G.LdA, G.Batch,
                 G.StrideA),
          extent(G.TransB ? N : K, G.TransB ? K : N, G.LdB, G.Batch,
                 G.StrideB),
          std::max(extent(M, N, G.LdC, G.Batch, G.StrideC),
                   uint64_t(std::max(M, N)))};
}

/// Each operand's buffer spans at least this much, so that a product
/// small enough to sit in L2 (50 MiB on Hopper) can take fresh operands at
/// every launch. In a training step a product's operands come from HBM:
/// the kernels before it evicted them. Timed on operands that L2 kept,
/// GPT-2 XL's products at 1024 tokens made 572 TFLOP/s in the H200's
/// table and 447 in its training step.
constexpr uint64_t ColdPoolBytes = 256ull << 20;

/// Launch I's copy of an operand of Bytes in a pool of PoolBytes: copies
/// 256-byte aligned, cycled, as many as fit (one where only one does).
uint64_t rotatedOffset(uint64_t I, uint64_t Bytes, uint64_t PoolBytes) {
  uint64_t Stride = (Bytes + 255) / 256 * 256;
  uint64_t Copies = std::max<uint64_t>(1, PoolBytes / Stride);
  return I % Copies * Stride;
}

/// Device memory freed when it goes out of scope.
struct Scratch {
  std::vector<void *> Blocks;
  ~Scratch() {
    for (void *B : Blocks)
      cudaFree(B);
  }
  void *get(uint64_t Bytes) {
    void *P = nullptr;
    if (cudaMalloc(&P, std::max<uint64_t>(Bytes, 256)) != cudaSuccess) {
      cudaGetLastError(); // Clear it: the caller reports the shortage.
      return nullptr;
    }
    Blocks.push_back(P);
    return P;
  }
};

} // namespace

std::string timeProducts(const plan::Plan &P, Matmuls &Products,
                         int Candidates, int Reps, cudaStream_t S,
                         std::vector<ProductTiming> &Out) {
  Out.clear();
  // Distinct products in program order; the largest extents of each
  // operand, shared by all.
  std::map<std::vector<int64_t>, size_t> Seen;
  uint64_t MaxA = 0, MaxB = 0, MaxC = 0;
  for (const plan::Kernel &K : P.Kernels) {
    const plan::GemmAttrs *G = std::get_if<plan::GemmAttrs>(&K.Attrs);
    if (!G || K.Inputs.empty())
      continue;
    ElementType T = ElementType(P.Values[K.Inputs[0].Value].Type);
    auto [It, New] = Seen.try_emplace(productKey(*G, T), Out.size());
    if (!New) {
      ++Out[It->second].Calls;
      continue;
    }
    Out.push_back({&K, T, 1, {}});
    Extents E = extentsOf(*G);
    MaxA = std::max(MaxA, E.A), MaxB = std::max(MaxB, E.B);
    MaxC = std::max(MaxC, E.C);
  }
  if (Out.empty())
    return "";
  // Room for the largest of each operand in fp32; A, B and C get at least
  // the cold pool, as small products take a fresh copy at each launch
  // (the bias and GELU's kept sum are not cycled).
  uint64_t MaxAux = MaxC;
  MaxA = std::max(MaxA, ColdPoolBytes / 4);
  MaxB = std::max(MaxB, ColdPoolBytes / 4);
  MaxC = std::max(MaxC, ColdPoolBytes / 4);
  Scratch Memory;
  void *A = Memory.get(MaxA * 4), *B = Memory.get(MaxB * 4),
       *C = Memory.get(MaxC * 4), *Aux = Memory.get(MaxAux * 4),
       *Bias = Memory.get(MaxAux * 4),
       *Work = Memory.get(plan::GemmWorkspaceBytes);
  if (!A || !B || !C || !Aux || !Bias || !Work) {
    Out.clear();
    return "no device memory for the largest product's operands";
  }
  struct Events {
    cudaEvent_t Begin = nullptr, End = nullptr;
    ~Events() {
      if (Begin)
        cudaEventDestroy(Begin);
      if (End)
        cudaEventDestroy(End);
    }
  } Ev;
  TRY_CUDA(cudaEventCreate(&Ev.Begin));
  TRY_CUDA(cudaEventCreate(&Ev.End));
  cudaEvent_t Begin = Ev.Begin, End = Ev.End;
  bool Filled = false;
  ElementType FilledAs = ElementType::F32;
  for (ProductTiming &Pt : Out) {
    const plan::Kernel &K = *Pt.Kernel;
    // Operands of random values of the product's own type (a bf16 product
    // must not read fp32 bits as its numbers).
    if (!Filled || FilledAs != Pt.Type) {
      // Every copy a launch may take, in the product's type.
      uint64_t PerFp32 = 4 / elementBytes(Pt.Type);
      for (auto [Ptr, N] : {std::pair<void *, uint64_t>{A, MaxA}, {B, MaxB},
                            {C, MaxC}, {Aux, MaxAux}, {Bias, MaxAux}})
        fillRandom<<<1024, 256, 0, S>>>(Ptr, N * PerFp32, Pt.Type);
      TRY_CUDA(cudaGetLastError());
      Filled = true, FilledAs = Pt.Type;
    }
    // The bias and GELU's kept sum only where the epilogue has them, as
    // the compute program passes them (cuBLASLt refuses a bias pointer
    // without a bias epilogue).
    plan::GemmEpilogue Epilogue = K.attrs<plan::KernelKind::Gemm>().Epilogue;
    void *BiasOrNot = plan::gemmUsesBias(Epilogue) ? Bias : nullptr;
    void *AuxOrNot = plan::gemmUsesPreActivation(Epilogue) ? Aux : nullptr;
    Extents E = extentsOf(K.attrs<plan::KernelKind::Gemm>());
    unsigned Size = elementBytes(Pt.Type);
    uint64_t Launches = 0;
    for (int Candidate = 0; Candidate < Candidates; ++Candidate) {
      bool Separate = false;
      auto Launch = [&] {
        uint64_t I = Launches++;
        auto At = [&](void *Pool, uint64_t Elems, uint64_t PoolElems) {
          return static_cast<char *>(Pool) +
                 rotatedOffset(I, Elems * Size, PoolElems * 4);
        };
        return Products.run(K, At(A, E.A, MaxA), At(B, E.B, MaxB), BiasOrNot,
                            AuxOrNot, At(C, E.C, MaxC), Pt.Type, Work,
                            plan::GemmWorkspaceBytes, S, Separate, Candidate);
      };
      if (!Launch().empty())
        break; // The heuristic offers no more.
      Launch();
      Launch();
      TRY_CUDA(cudaEventRecord(Begin, S));
      for (int R = 0; R < Reps; ++R)
        Launch();
      TRY_CUDA(cudaEventRecord(End, S));
      TRY_CUDA(cudaEventSynchronize(End));
      float Took = 0;
      TRY_CUDA(cudaEventElapsedTime(&Took, Begin, End));
      Pt.Ms.push_back(Took / float(Reps));
    }
  }
  return "";
}

std::vector<plan::GemmAlgorithm>
fasterAlgorithms(const std::vector<ProductTiming> &Timed, double Margin) {
  std::vector<plan::GemmAlgorithm> Chosen;
  for (const ProductTiming &Pt : Timed) {
    if (Pt.Ms.size() < 2)
      continue;
    size_t Best = size_t(std::min_element(Pt.Ms.begin(), Pt.Ms.end()) -
                         Pt.Ms.begin());
    if (Best == 0 || Pt.Ms[Best] >= Pt.Ms[0] * (1 - Margin) ||
        Best > plan::GemmAlgorithm::MaxCandidate)
      continue;
    Chosen.push_back({Pt.Kernel->attrs<plan::KernelKind::Gemm>(),
                      plan::DType(Pt.Type), uint32_t(Best)});
  }
  return Chosen;
}

} // namespace dsrun
