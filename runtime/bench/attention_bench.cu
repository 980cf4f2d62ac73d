//===- attention_bench.cu - dsrun's attention kernels, timed alone --------===//
//
//   dsrun-attention-bench [--json OUT.jsonl] [--reps R] [--algorithm A]...
//
// For each shape dsrun trains (the models of the README's table, and head
// sizes 80, 96 and 256), each attention algorithm that runs it (flash:
// dsrun's kernels; cudnn: cuDNN's fused attention) runs the forward and
// the backward as a plan's kernels would (flash through the kernel
// registry's launch, runtime/src/KernelLaunch.cu; cuDNN's directly, which
// the launch would replace by flash where cuDNN declines), on random bf16
// operands laid out
// [B, T, H, D] as a fused projection leaves them. Prints the median of R
// launches after 5 warm-ups as TFLOP/s (4 B H T S D, halved when causal;
// the backward 2.5 times that), and how far cuDNN's outputs are from
// flash's. runtime/bench/attention_compare.sh prints these beside
// PyTorch's kernels in the same run.
//
//===----------------------------------------------------------------------===//

#include "CudnnAttention.h"
#include "ComputeKernels.h"

#include "dsc/AttentionAlgorithms.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace plan = dsc::plan;
using namespace dsrun;

namespace {

struct Shape {
  const char *Name;
  int64_t B, Hq, Hkv, T, D;
  bool Causal;
};

const Shape Shapes[] = {
    {"llama3-8b 2x2048", 2, 32, 8, 2048, 128, true},
    {"gpt2-small 16x1024", 16, 12, 12, 1024, 64, true},
    {"gpt2-xl 4x1024", 4, 25, 25, 1024, 64, true},
    {"llama-1b 4x1024", 4, 32, 4, 1024, 64, true},
    {"hd128 full 4x1024", 4, 16, 16, 1024, 128, false},
    {"hd64 1x4096", 1, 16, 16, 4096, 64, true},
    {"hd128 1x8192", 1, 32, 8, 8192, 128, true},
    {"hd64 64x128", 64, 12, 12, 128, 64, true},
    {"hd80 4x1024", 4, 32, 32, 1024, 80, true},
    {"hd96 4x1024", 4, 32, 32, 1024, 96, true},
    {"hd256 2x2048", 2, 16, 8, 2048, 256, true},
};

#define CHECK(Call)                                                            \
  do {                                                                         \
    if (cudaError_t E_ = (Call); E_ != cudaSuccess) {                          \
      fprintf(stderr, "dsrun-attention-bench: %s: %s\n", #Call,                \
              cudaGetErrorString(E_));                                         \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/// A [B, H, T, D] view of a [B, T, H, D] buffer.
plan::TensorRef bthd(uint32_t Value, int64_t B, int64_t H, int64_t T,
                     int64_t D) {
  return {Value, 0, {B, H, T, D}, {T * H * D, D, H * D, 1}};
}

/// Device memory of N elements of Bytes each, random where Fill.
void *buffer(uint64_t N, unsigned Bytes, std::mt19937 &Rng, bool Fill) {
  void *P = nullptr;
  CHECK(cudaMalloc(&P, std::max<uint64_t>(N * Bytes, 256)));
  if (Fill) {
    std::vector<__nv_bfloat16> H(N);
    std::normal_distribution<float> Dist(0, 1);
    for (auto &X : H)
      X = __float2bfloat16(Dist(Rng));
    CHECK(cudaMemcpy(P, H.data(), N * 2, cudaMemcpyHostToDevice));
  } else {
    CHECK(cudaMemset(P, 0, N * Bytes));
  }
  return P;
}

/// The largest difference between two bf16 device arrays of N elements.
double maxDiff(const void *A, const void *B, uint64_t N) {
  std::vector<__nv_bfloat16> X(N), Y(N);
  CHECK(cudaMemcpy(X.data(), A, N * 2, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(Y.data(), B, N * 2, cudaMemcpyDeviceToHost));
  double M = 0;
  for (uint64_t I = 0; I < N; ++I)
    M = std::max(M, std::fabs(double(__bfloat162float(X[I])) -
                              double(__bfloat162float(Y[I]))));
  return M;
}

} // namespace

int main(int Argc, char **Argv) {
  std::string Json;
  int Reps = 20;
  std::vector<plan::AttentionAlgorithm> Algos = {
      plan::AttentionAlgorithm::Flash, plan::AttentionAlgorithm::Cudnn};
  bool AlgosGiven = false;
  for (int I = 1; I < Argc; ++I) {
    std::string A = Argv[I];
    if (A == "--json" && I + 1 < Argc) {
      Json = Argv[++I];
    } else if (A == "--reps" && I + 1 < Argc) {
      Reps = std::max(1, atoi(Argv[++I]));
    } else if (A == "--algorithm" && I + 1 < Argc) {
      std::string Name = Argv[++I];
      if (!AlgosGiven)
        Algos.clear();
      AlgosGiven = true;
      if (Name == "flash")
        Algos.push_back(plan::AttentionAlgorithm::Flash);
      else if (Name == "cudnn")
        Algos.push_back(plan::AttentionAlgorithm::Cudnn);
      else {
        fprintf(stderr, "dsrun-attention-bench: --algorithm flash or cudnn\n");
        return 2;
      }
    } else {
      fprintf(stderr, "usage: dsrun-attention-bench [--json OUT.jsonl] "
                      "[--reps R] [--algorithm flash|cudnn]...\n");
      return 2;
    }
  }
  FILE *Out = Json.empty() ? nullptr : fopen(Json.c_str(), "w");
  if (!Json.empty() && !Out) {
    fprintf(stderr, "dsrun-attention-bench: cannot write %s\n", Json.c_str());
    return 2;
  }
  cudaDeviceProp Prop;
  CHECK(cudaGetDeviceProperties(&Prop, 0));
  printf("%s; cuDNN: %s; DSRUN_CUDNN_DETERMINISTIC=%s\n", Prop.name,
         cudnnAttentionLibrary().c_str(),
         getenv("DSRUN_CUDNN_DETERMINISTIC") ? getenv("DSRUN_CUDNN_DETERMINISTIC")
                                             : "1");
  std::mt19937 Rng(1234);
  cudaStream_t S;
  CHECK(cudaStreamCreate(&S));
  cudaEvent_t Begin, End;
  CHECK(cudaEventCreate(&Begin));
  CHECK(cudaEventCreate(&End));
  for (const Shape &Sh : Shapes) {
    int64_t B = Sh.B, Hq = Sh.Hq, Hkv = Sh.Hkv, T = Sh.T, D = Sh.D;
    uint64_t NQ = uint64_t(B * T * Hq * D), NK = uint64_t(B * T * Hkv * D),
             Rows = uint64_t(B * Hq * T);
    // Values: 0 q, 1 k, 2 v, 3 out, 4 lse, 5 dout, 6 dq, 7 dk, 8 dv.
    void *Q = buffer(NQ, 2, Rng, true), *K = buffer(NK, 2, Rng, true),
         *V = buffer(NK, 2, Rng, true), *Do = buffer(NQ, 2, Rng, true);
    plan::AttentionAttrs A;
    A.Batch = B, A.QHeads = Hq, A.KVHeads = Hkv, A.QLen = T, A.KVLen = T;
    A.HeadDim = A.ValueDim = D, A.Causal = Sh.Causal;
    A.Scale = 1 / std::sqrt(double(D));
    double Flops = 4.0 * double(B * Hq) * double(T) * double(T) * double(D);
    if (Sh.Causal)
      Flops /= 2;
    // Each algorithm's outputs, kept to compare cuDNN's with flash's.
    std::vector<std::vector<void *>> Results;
    for (plan::AttentionAlgorithm Algo : Algos) {
      if (Algo == plan::AttentionAlgorithm::Flash &&
          D > plan::FlashMaxHeadDim)
        continue;
      A.Algorithm = Algo;
      void *O = buffer(NQ, 2, Rng, false), *Lse = buffer(Rows, 4, Rng, false),
           *Dq = buffer(NQ, 2, Rng, false), *Dk = buffer(NK, 2, Rng, false),
           *Dv = buffer(NK, 2, Rng, false);
      uint64_t WorkBytes = std::max(plan::attentionWorkspace(A, false, 2),
                                    plan::attentionWorkspace(A, true, 2));
      void *Work = nullptr;
      CHECK(cudaMalloc(&Work, std::max<uint64_t>(WorkBytes, 256)));
      plan::Kernel Fwd, Bwd;
      Fwd.Name = Bwd.Name = Sh.Name;
      Fwd.Attrs = A;
      Bwd.Attrs = plan::AttentionGradAttrs{A};
      plan::TensorRef LseRef{4, 0, {B, Hq, T}, {Hq * T, T, 1}};
      Fwd.Inputs = {bthd(0, B, Hq, T, D), bthd(1, B, Hkv, T, D),
                    bthd(2, B, Hkv, T, D)};
      Fwd.Outputs = {bthd(3, B, Hq, T, D), LseRef};
      Bwd.Inputs = {bthd(5, B, Hq, T, D), bthd(0, B, Hq, T, D),
                    bthd(1, B, Hkv, T, D), bthd(2, B, Hkv, T, D),
                    bthd(3, B, Hq, T, D), LseRef};
      Bwd.Outputs = {bthd(6, B, Hq, T, D), bthd(7, B, Hkv, T, D),
                     bthd(8, B, Hkv, T, D)};
      using E = ElementType;
      KernelOperands FwdOps{{Q, K, V}, {O, Lse}, {E::BF16, E::BF16, E::BF16},
                            {E::BF16, E::F32}};
      KernelOperands BwdOps{{Do, Q, K, V, O, Lse},
                            {Dq, Dk, Dv},
                            {E::BF16, E::BF16, E::BF16, E::BF16, E::BF16,
                             E::F32},
                            {E::BF16, E::BF16, E::BF16}};
      KernelContext C;
      C.Workspace = Work;
      C.WorkspaceBytes = WorkBytes;
      double Ms[2] = {0, 0};
      std::string Problem;
      for (int Dir = 0; Dir < 2 && Problem.empty(); ++Dir) {
        const plan::Kernel &Kr = Dir ? Bwd : Fwd;
        const KernelOperands &Ops = Dir ? BwdOps : FwdOps;
        std::vector<float> Times;
        for (int R = 0; R < Reps + 5 && Problem.empty(); ++R) {
          CHECK(cudaEventRecord(Begin, S));
          // cuDNN's directly: the launch would fall back to flash.
          Problem = Algo == plan::AttentionAlgorithm::Cudnn
                        ? cudnnAttention(Kr, Ops, C, S)
                        : launchComputeKernel(Kr, Ops, C, S);
          CHECK(cudaEventRecord(End, S));
          CHECK(cudaEventSynchronize(End));
          CHECK(cudaGetLastError());
          float T = 0;
          CHECK(cudaEventElapsedTime(&T, Begin, End));
          if (R >= 5)
            Times.push_back(T);
        }
        if (!Times.empty()) {
          std::sort(Times.begin(), Times.end());
          Ms[Dir] = Times[Times.size() / 2];
        }
      }
      const char *Name = plan::enumName(Algo);
      if (!Problem.empty()) {
        printf("%-20s %-6s cannot run: %s\n", Sh.Name, Name, Problem.c_str());
        continue;
      }
      double FwdTf = Flops / Ms[0] / 1e9, BwdTf = 2.5 * Flops / Ms[1] / 1e9;
      printf("%-20s %-6s fwd %7.3f ms %6.1f TFLOP/s  bwd %7.3f ms %6.1f "
             "TFLOP/s\n",
             Sh.Name, Name, Ms[0], FwdTf, Ms[1], BwdTf);
      if (Out)
        fprintf(Out,
                "{\"shape\": \"%s\", \"impl\": \"dsrun-%s\", \"fwd_ms\": %.4f, "
                "\"bwd_ms\": %.4f, \"fwd_tflops\": %.1f, \"bwd_tflops\": "
                "%.1f}\n",
                Sh.Name, Name, Ms[0], Ms[1], FwdTf, BwdTf);
      Results.push_back({O, Dq, Dk, Dv, Lse});
      CHECK(cudaFree(Work));
    }
    if (Results.size() == 2)
      printf("%-20s cudnn vs flash: largest difference out %.3g, dq %.3g, "
             "dk %.3g, dv %.3g\n",
             Sh.Name, maxDiff(Results[0][0], Results[1][0], NQ),
             maxDiff(Results[0][1], Results[1][1], NQ),
             maxDiff(Results[0][2], Results[1][2], NK),
             maxDiff(Results[0][3], Results[1][3], NK));
    for (auto &R : Results)
      for (void *P : R)
        CHECK(cudaFree(P));
    for (void *P : {Q, K, V, Do})
      CHECK(cudaFree(P));
  }
  if (Out)
    fclose(Out);
  return 0;
}
