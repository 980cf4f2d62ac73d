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
    int64_t M = G->M, N = G->N, Kd = G->K, Batch = G->Batch;
    bool TransA = G->TransA, TransB = G->TransB;
    MaxA = std::max(MaxA, extent(TransA ? Kd : M, TransA ? M : Kd, G->LdA,
                                 Batch, G->StrideA));
    MaxB = std::max(MaxB, extent(TransB ? N : Kd, TransB ? Kd : N, G->LdB,
                                 Batch, G->StrideB));
    MaxC = std::max({MaxC, extent(M, N, G->LdC, Batch, G->StrideC),
                     uint64_t(std::max(M, N))});
  }
  if (Out.empty())
    return "";
  Scratch Memory;
  void *A = Memory.get(MaxA * 4), *B = Memory.get(MaxB * 4),
       *C = Memory.get(MaxC * 4), *Aux = Memory.get(MaxC * 4),
       *Bias = Memory.get(MaxC * 4),
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
      for (auto [Ptr, N] : {std::pair<void *, uint64_t>{A, MaxA}, {B, MaxB},
                            {C, MaxC}, {Aux, MaxC}, {Bias, MaxC}})
        fillRandom<<<1024, 256, 0, S>>>(Ptr, N, Pt.Type);
      TRY_CUDA(cudaGetLastError());
      Filled = true, FilledAs = Pt.Type;
    }
    // The bias and GELU's kept sum only where the epilogue has them, as
    // the compute program passes them (cuBLASLt refuses a bias pointer
    // without a bias epilogue).
    plan::GemmEpilogue Epilogue = K.attrs<plan::KernelKind::Gemm>().Epilogue;
    void *BiasOrNot = plan::gemmUsesBias(Epilogue) ? Bias : nullptr;
    void *AuxOrNot = plan::gemmUsesPreActivation(Epilogue) ? Aux : nullptr;
    for (int Candidate = 0; Candidate < Candidates; ++Candidate) {
      bool Separate = false;
      auto Launch = [&] {
        return Products.run(K, A, B, BiasOrNot, AuxOrNot, C, Pt.Type, Work,
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
