//===- gemm_bench.cu - Each product of a plan under each algorithm --------===//
//
//   dsrun-gemm-bench PLAN.bin [--candidates N] [--reps R]
//
// dsrun runs every product of the compute program with the algorithm
// cuBLASLt's heuristic puts first (Matmuls.h says why). This measures what
// that choice costs: for each distinct product of the plan (shapes,
// strides, epilogue) it times the first N algorithms the heuristic offers
// on operands of random values, and prints the first's time beside the
// fastest's, weighted by how often a step runs the product. Operands are
// the product's own extents, not the plan's arena, so it needs the plan
// alone.
//
//===----------------------------------------------------------------------===//

#include "ComputeKernels.h"
#include "Arena.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace plan = dsc::plan;
using namespace dsrun;

#define CHECK(Call)                                                            \
  do {                                                                         \
    if (cudaError_t E_ = (Call); E_ != cudaSuccess) {                          \
      fprintf(stderr, "dsrun-gemm-bench: %s failed: %s\n", #Call,             \
              cudaGetErrorString(E_));                                         \
      exit(2);                                                                 \
    }                                                                          \
  } while (0)

namespace {

/// Values in [-1, 1) from a hash of the index, as 16-bit or 32-bit floats.
__global__ void fillKernel(void *Out, uint64_t N, int Bytes) {
  for (uint64_t I = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; I < N;
       I += uint64_t(gridDim.x) * blockDim.x) {
    uint64_t H = (I + 1) * 0x9E3779B97F4A7C15ull;
    H ^= H >> 29;
    H *= 0xBF58476D1CE4E5B9ull;
    H ^= H >> 32;
    float X = float(H & 0xFFFFFF) / float(1 << 23) - 1.0f;
    if (Bytes == 4)
      static_cast<float *>(Out)[I] = X;
    else
      static_cast<__nv_bfloat16 *>(Out)[I] = __float2bfloat16(X);
  }
}

/// Elements a row-major operand of Rows x Cols at leading dimension Ld
/// spans, Batch of them Stride apart.
uint64_t extent(int64_t Rows, int64_t Cols, int64_t Ld, int64_t Batch,
                int64_t Stride) {
  return uint64_t((Batch - 1) * Stride + (Rows - 1) * Ld + Cols);
}

struct Shape {
  const plan::Kernel *K = nullptr;
  ElementType T = ElementType::BF16;
  unsigned Calls = 0;
  uint64_t ExtentA = 0, ExtentB = 0, ExtentC = 0;
};

} // namespace

int main(int Argc, char **Argv) {
  std::string Path;
  int Candidates = 8, Reps = 20;
  for (int I = 1; I < Argc; ++I) {
    std::string A = Argv[I];
    if ((A == "--candidates" || A == "--reps") && I + 1 < Argc) {
      int V = atoi(Argv[++I]);
      if (V < 1) {
        fprintf(stderr, "dsrun-gemm-bench: %s needs a count above 0\n",
                A.c_str());
        return 2;
      }
      (A == "--reps" ? Reps : Candidates) = V;
    } else if (A[0] != '-' && Path.empty()) {
      Path = A;
    } else {
      fprintf(stderr, "usage: dsrun-gemm-bench PLAN.bin [--candidates N] "
                      "[--reps R]\n");
      return 2;
    }
  }
  if (Path.empty()) {
    fprintf(stderr, "usage: dsrun-gemm-bench PLAN.bin [--candidates N] "
                    "[--reps R]\n");
    return 2;
  }
  std::string Error;
  bool Unreadable;
  std::optional<plan::Plan> Loaded = loadPlanFile(Path, Error, Unreadable);
  if (!Loaded) {
    fprintf(stderr, "%s\n", Error.c_str());
    return 1;
  }
  const plan::Plan &P = *Loaded;
  // Distinct products, in program order; a step runs each kernel once per
  // micro step.
  std::map<std::vector<int64_t>, Shape> Shapes;
  std::vector<std::vector<int64_t>> Order;
  uint64_t MaxA = 0, MaxB = 0, MaxC = 0;
  for (const plan::Kernel &K : P.Kernels) {
    if (K.Kind != plan::KernelKind::Gemm)
      continue;
    const std::vector<int64_t> &I = K.Ints;
    std::vector<int64_t> Key = I;
    ElementType T = ElementType(P.Values[K.Inputs[0].Value].Type);
    Key.push_back(int64_t(T));
    auto [It, New] = Shapes.try_emplace(Key);
    Shape &S = It->second;
    ++S.Calls;
    if (!New)
      continue;
    Order.push_back(Key);
    int64_t M = I[0], N = I[1], Kd = I[2], Batch = I[3];
    bool TransA = I[4] != 0, TransB = I[5] != 0;
    S.K = &K;
    S.T = T;
    S.ExtentA = extent(TransA ? Kd : M, TransA ? M : Kd, I[6], Batch, I[9]);
    S.ExtentB = extent(TransB ? N : Kd, TransB ? Kd : N, I[7], Batch, I[10]);
    S.ExtentC = extent(M, N, I[8], Batch, I[11]);
    MaxA = std::max(MaxA, S.ExtentA);
    MaxB = std::max(MaxB, S.ExtentB);
    MaxC = std::max({MaxC, S.ExtentC, uint64_t(std::max(M, N))});
  }
  if (Order.empty()) {
    fprintf(stderr, "dsrun-gemm-bench: %s has no products in its compute "
                    "program (plan it with a model)\n", Path.c_str());
    return 1;
  }
  // Operands of the largest product, shared by all; 4 bytes an element
  // covers every type.
  void *A, *B, *C, *Aux, *Bias, *Work;
  uint64_t WorkBytes = plan::GemmWorkspaceBytes;
  CHECK(cudaMalloc(&A, MaxA * 4));
  CHECK(cudaMalloc(&B, MaxB * 4));
  CHECK(cudaMalloc(&C, MaxC * 4));
  CHECK(cudaMalloc(&Aux, MaxC * 4));
  CHECK(cudaMalloc(&Bias, MaxC * 4));
  CHECK(cudaMalloc(&Work, WorkBytes));
  int ElemBytes = P.Settings.ParamDType == plan::DType::F32 ? 4 : 2;
  for (auto [Ptr, N] : {std::pair<void *, uint64_t>{A, MaxA}, {B, MaxB},
                        {C, MaxC}, {Aux, MaxC}, {Bias, MaxC}})
    fillKernel<<<1024, 256>>>(Ptr, N, ElemBytes);
  CHECK(cudaDeviceSynchronize());

  Matmuls Products;
  if (std::string E = Products.init(); !E.empty()) {
    fprintf(stderr, "dsrun-gemm-bench: %s\n", E.c_str());
    return 2;
  }
  cudaStream_t Stream;
  CHECK(cudaStreamCreate(&Stream));
  cudaEvent_t Begin, End;
  CHECK(cudaEventCreate(&Begin));
  CHECK(cudaEventCreate(&End));
  printf("%s: %zu distinct products of %zu kernels; the heuristic's first "
         "%d algorithms, %d launches each\n",
         Path.c_str(), Order.size(),
         size_t(std::count_if(P.Kernels.begin(), P.Kernels.end(),
                              [](const plan::Kernel &K) {
                                return K.Kind == plan::KernelKind::Gemm;
                              })),
         Candidates, Reps);
  printf("%-36s %5s %6s %6s %6s %5s %4s %9s %9s %5s %7s\n", "first kernel",
         "calls", "M", "N", "K", "batch", "epi", "first ms", "best ms",
         "best", "offered");
  double FirstTotal = 0, BestTotal = 0, Flops = 0;
  for (const std::vector<int64_t> &Key : Order) {
    const Shape &S = Shapes[Key];
    const plan::Kernel &K = *S.K;
    // The bias and GELU's kept sum only where the epilogue has them, as
    // dsrun passes them (cuBLASLt refuses a bias pointer without a bias).
    auto Epilogue = plan::GemmEpilogue(K.Ints[12]);
    void *BiasOrNot = Epilogue == plan::GemmEpilogue::None ||
                              Epilogue == plan::GemmEpilogue::DGeluTanh
                          ? nullptr
                          : Bias;
    void *AuxOrNot = Epilogue == plan::GemmEpilogue::BiasGeluTanh ||
                             Epilogue == plan::GemmEpilogue::DGeluTanh
                         ? Aux
                         : nullptr;
    std::vector<float> Ms;
    for (int Cand = 0; Cand < Candidates; ++Cand) {
      bool Separate = false;
      auto Launch = [&]() {
        return Products.run(K, A, B, BiasOrNot, AuxOrNot, C, S.T, Work,
                            WorkBytes, Stream, Separate, Cand);
      };
      std::string E = Launch();
      if (!E.empty()) {
        if (Cand == 0)
          fprintf(stderr, "dsrun-gemm-bench: %s: %s\n", K.Name.c_str(),
                  E.c_str());
        break; // The heuristic offers no more.
      }
      for (int W = 0; W < 2; ++W)
        Launch();
      CHECK(cudaEventRecord(Begin, Stream));
      for (int R = 0; R < Reps; ++R)
        Launch();
      CHECK(cudaEventRecord(End, Stream));
      CHECK(cudaEventSynchronize(End));
      if (cudaGetLastError() != cudaSuccess)
        break;
      float Took = 0;
      CHECK(cudaEventElapsedTime(&Took, Begin, End));
      Ms.push_back(Took / float(Reps));
    }
    if (Ms.empty())
      continue;
    size_t Best = size_t(std::min_element(Ms.begin(), Ms.end()) - Ms.begin());
    const std::vector<int64_t> &I = K.Ints;
    printf("%-36.36s %5u %6lld %6lld %6lld %5lld %4lld %9.4f %9.4f %5zu %7zu\n",
           K.Name.c_str(), S.Calls, (long long)I[0], (long long)I[1],
           (long long)I[2], (long long)I[3], (long long)I[12], Ms[0],
           Ms[Best], Best, Ms.size());
    FirstTotal += Ms[0] * S.Calls;
    BestTotal += Ms[Best] * S.Calls;
    Flops += 2.0 * double(I[0]) * double(I[1]) * double(I[2]) *
             double(I[3]) * S.Calls;
  }
  printf("one micro step's products: %.3f ms with the first algorithm "
         "(%.1f TFLOP/s), %.3f ms with the fastest of each (%.1f TFLOP/s): "
         "%.1f %% less\n",
         FirstTotal, Flops / FirstTotal / 1e9, BestTotal,
         Flops / BestTotal / 1e9,
         FirstTotal > 0 ? 100 * (FirstTotal - BestTotal) / FirstTotal : 0.0);
  return 0;
}
