//===- attention_bench.cu - dsrun's attention kernels, timed alone --------===//
//
//   dsrun-attention-bench [--json OUT.jsonl] [--reps R] [--algorithm A]...
//   dsrun-attention-bench --grid [--reps R] [--algorithm A]...
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
// PyTorch's kernels in the same run. --grid prints the attention section
// of a time table instead (runtime/bench/time_tables.sh).
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

/// A hash of I, 64 bits.
__device__ uint64_t mixBits(uint64_t I) {
  I = (I + 1) * 0x9E3779B97F4A7C15ull;
  I ^= I >> 29;
  I *= 0xBF58476D1CE4E5B9ull;
  return I ^ (I >> 32);
}

/// Standard normal bf16 values from a hash of (Seed, index), Box-Muller:
/// drawn on the device, so that the grid's shapes (hundreds of millions
/// of values) do not wait on the host.
__global__ void fillNormal(__nv_bfloat16 *P, uint64_t N, uint64_t Seed) {
  for (uint64_t I = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; I < N;
       I += uint64_t(gridDim.x) * blockDim.x) {
    float U1 = (float(mixBits(Seed ^ (2 * I)) >> 40) + 1) / 16777217.0f;
    float U2 = float(mixBits(Seed ^ (2 * I + 1)) >> 40) / 16777216.0f;
    P[I] = __float2bfloat16(sqrtf(-2 * logf(U1)) * cospif(2 * U2));
  }
}

/// Device memory of N elements of Bytes each, random where Fill.
void *buffer(uint64_t N, unsigned Bytes, std::mt19937 &Rng, bool Fill) {
  void *P = nullptr;
  CHECK(cudaMalloc(&P, std::max<uint64_t>(N * Bytes, 256)));
  if (Fill) {
    fillNormal<<<1024, 256>>>(static_cast<__nv_bfloat16 *>(P), N,
                              (uint64_t(Rng()) << 32) | Rng());
    CHECK(cudaGetLastError());
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

/// The operands of one attention shape, random bf16 q, k, v and dout.
struct Operands {
  Operands(const Shape &Sh, std::mt19937 &Rng)
      : NQ(uint64_t(Sh.B * Sh.T * Sh.Hq * Sh.D)),
        NK(uint64_t(Sh.B * Sh.T * Sh.Hkv * Sh.D)),
        Rows(uint64_t(Sh.B * Sh.Hq * Sh.T)), Q(buffer(NQ, 2, Rng, true)),
        K(buffer(NK, 2, Rng, true)), V(buffer(NK, 2, Rng, true)),
        Do(buffer(NQ, 2, Rng, true)) {}
  ~Operands() {
    for (void *P : {Q, K, V, Do})
      cudaFree(P);
  }
  uint64_t NQ, NK, Rows;
  void *Q, *K, *V, *Do;
};

/// One algorithm's forward and backward at shape Sh: the median of Reps
/// launches after 5 warm-ups, in Ms; its outputs (out, dq, dk, dv, lse)
/// in Results, which the caller frees. Returns "" or why it cannot run.
std::string timeAttention(const Shape &Sh, plan::AttentionAlgorithm Algo,
                          const Operands &In, int Reps, std::mt19937 &Rng,
                          cudaStream_t S, double (&Ms)[2],
                          std::vector<void *> &Results) {
  int64_t B = Sh.B, Hq = Sh.Hq, Hkv = Sh.Hkv, T = Sh.T, D = Sh.D;
  plan::AttentionAttrs A;
  A.Batch = B, A.QHeads = Hq, A.KVHeads = Hkv, A.QLen = T, A.KVLen = T;
  A.HeadDim = A.ValueDim = D, A.Causal = Sh.Causal;
  A.Scale = 1 / std::sqrt(double(D));
  A.Algorithm = Algo;
  // Values: 0 q, 1 k, 2 v, 3 out, 4 lse, 5 dout, 6 dq, 7 dk, 8 dv.
  void *O = buffer(In.NQ, 2, Rng, false), *Lse = buffer(In.Rows, 4, Rng, false),
       *Dq = buffer(In.NQ, 2, Rng, false), *Dk = buffer(In.NK, 2, Rng, false),
       *Dv = buffer(In.NK, 2, Rng, false);
  Results = {O, Dq, Dk, Dv, Lse};
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
  KernelOperands FwdOps{{In.Q, In.K, In.V}, {O, Lse},
                        {E::BF16, E::BF16, E::BF16}, {E::BF16, E::F32}};
  KernelOperands BwdOps{{In.Do, In.Q, In.K, In.V, O, Lse},
                        {Dq, Dk, Dv},
                        {E::BF16, E::BF16, E::BF16, E::BF16, E::BF16, E::F32},
                        {E::BF16, E::BF16, E::BF16}};
  KernelContext C;
  C.Workspace = Work;
  C.WorkspaceBytes = WorkBytes;
  cudaEvent_t Begin, End;
  CHECK(cudaEventCreate(&Begin));
  CHECK(cudaEventCreate(&End));
  Ms[0] = Ms[1] = 0;
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
      float Took = 0;
      CHECK(cudaEventElapsedTime(&Took, Begin, End));
      if (R >= 5)
        Times.push_back(Took);
    }
    if (!Times.empty()) {
      std::sort(Times.begin(), Times.end());
      Ms[Dir] = Times[Times.size() / 2];
    }
  }
  CHECK(cudaEventDestroy(Begin));
  CHECK(cudaEventDestroy(End));
  CHECK(cudaFree(Work));
  return Problem;
}

/// Forward FLOPs as the plan counts them: 4 B H T S D, halved when causal.
double attentionFlops(const Shape &Sh) {
  double F = 4.0 * double(Sh.B * Sh.Hq) * double(Sh.T) * double(Sh.T) *
             double(Sh.D);
  return Sh.Causal ? F / 2 : F;
}

/// The attention section of a time table: each algorithm's TFLOP/s
/// forward and backward, at head sizes 64, 128 and 256, causal or not,
/// over sequences of 256 to 8192 tokens, 16 heads, as many sequences as
/// make 16 k tokens.
int printGrid(const std::vector<plan::AttentionAlgorithm> &Algos, int Reps) {
  const int64_t Seqs[] = {256, 512, 1024, 2048, 4096, 8192};
  std::mt19937 Rng(1234);
  cudaStream_t S;
  CHECK(cudaStreamCreate(&S));
  fprintf(stderr, "cuDNN: %s\n", cudnnAttentionLibrary().c_str());
  printf("attention:\n  sequences: [256, 512, 1024, 2048, 4096, 8192]\n"
         "  entries:\n");
  for (plan::AttentionAlgorithm Algo : Algos)
    for (int64_t D : {64, 128, 256})
      for (bool Causal : {true, false}) {
        if (Algo == plan::AttentionAlgorithm::Flash &&
            D > plan::FlashMaxHeadDim)
          continue;
        std::string Rates[2];
        for (int64_t T : Seqs) {
          Shape Sh{"grid", std::max<int64_t>(1, 16384 / T), 16, 16, T, D,
                   Causal};
          Operands In(Sh, Rng);
          double Ms[2];
          std::vector<void *> Results;
          std::string Problem =
              timeAttention(Sh, Algo, In, Reps, Rng, S, Ms, Results);
          for (void *P : Results)
            CHECK(cudaFree(P));
          for (int Dir = 0; Dir < 2; ++Dir) {
            double Tf = Problem.empty() && Ms[Dir] > 0
                            ? (Dir ? 2.5 : 1.0) * attentionFlops(Sh) /
                                  Ms[Dir] / 1e9
                            : 0.0;
            char Text[32];
            snprintf(Text, sizeof(Text), "%s%.1f", Rates[Dir].empty() ? "" : ", ",
                     Tf);
            Rates[Dir] += Text;
          }
        }
        printf("    - { algorithm: %s, head_dim: %lld, causal: %s, forward: "
               "[%s], backward: [%s] }\n",
               plan::enumName(Algo), (long long)D, Causal ? "true" : "false",
               Rates[0].c_str(), Rates[1].c_str());
        fflush(stdout);
      }
  return 0;
}

} // namespace

int main(int Argc, char **Argv) {
  std::string Json;
  int Reps = 20;
  std::vector<plan::AttentionAlgorithm> Algos = {
      plan::AttentionAlgorithm::Flash, plan::AttentionAlgorithm::Cudnn};
  bool AlgosGiven = false, Grid = false;
  for (int I = 1; I < Argc; ++I) {
    std::string A = Argv[I];
    if (A == "--json" && I + 1 < Argc) {
      Json = Argv[++I];
    } else if (A == "--reps" && I + 1 < Argc) {
      Reps = std::max(1, atoi(Argv[++I]));
    } else if (A == "--grid") {
      Grid = true;
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
                      "[--grid] [--reps R] [--algorithm flash|cudnn]...\n");
      return 2;
    }
  }
  if (Grid)
    return printGrid(Algos, Reps);
  FILE *Out = Json.empty() ? nullptr : fopen(Json.c_str(), "w");
  if (!Json.empty() && !Out) {
    fprintf(stderr, "dsrun-attention-bench: cannot write %s\n", Json.c_str());
    return 2;
  }
  cudaDeviceProp Prop;
  CHECK(cudaGetDeviceProperties(&Prop, 0));
  printf("%s; cuDNN: %s\n", Prop.name, cudnnAttentionLibrary().c_str());
  std::mt19937 Rng(1234);
  cudaStream_t S;
  CHECK(cudaStreamCreate(&S));
  for (const Shape &Sh : Shapes) {
    Operands In(Sh, Rng);
    // Each algorithm's outputs, kept to compare cuDNN's with flash's.
    std::vector<std::vector<void *>> Results;
    for (plan::AttentionAlgorithm Algo : Algos) {
      if (Algo == plan::AttentionAlgorithm::Flash &&
          Sh.D > plan::FlashMaxHeadDim)
        continue;
      double Ms[2];
      std::vector<void *> Kept;
      std::string Problem = timeAttention(Sh, Algo, In, Reps, Rng, S, Ms, Kept);
      const char *Name = plan::enumName(Algo);
      if (!Problem.empty()) {
        printf("%-20s %-6s cannot run: %s\n", Sh.Name, Name, Problem.c_str());
        for (void *P : Kept)
          CHECK(cudaFree(P));
        continue;
      }
      double Flops = attentionFlops(Sh);
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
      Results.push_back(Kept);
    }
    if (Results.size() == 2)
      printf("%-20s cudnn vs flash: largest difference out %.3g, dq %.3g, "
             "dk %.3g, dv %.3g\n",
             Sh.Name, maxDiff(Results[0][0], Results[1][0], In.NQ),
             maxDiff(Results[0][1], Results[1][1], In.NQ),
             maxDiff(Results[0][2], Results[1][2], In.NK),
             maxDiff(Results[0][3], Results[1][3], In.NK));
    for (auto &R : Results)
      for (void *P : R)
        CHECK(cudaFree(P));
  }
  if (Out)
    fclose(Out);
  return 0;
}
