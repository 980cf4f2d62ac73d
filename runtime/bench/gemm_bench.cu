//===- gemm_bench.cu - Each product of a plan under each algorithm --------===//
//
//   dsrun-gemm-bench PLAN.bin [--candidates N] [--reps R]
//   dsrun-gemm-bench --grid [--reps R]
//   dsrun-gemm-bench --epilogues [--reps R]
//
// Prints, for each distinct product of the plan's compute program, the
// time a launch takes under the algorithm cuBLASLt's heuristic puts first
// and under the fastest of its first N (GemmTuning.h), and the totals
// weighted by how often a micro step runs each product: what dsrun
// --calibration-out would have the plan choose, and what it saves. Needs
// the plan alone (operands of random values).
//
// --grid times bf16 products over a grid of sizes instead, M, N and K each
// from 128 to 32768, in the three layouts training runs (nt: x W^T, the
// forward; nn: dy W, the input's gradient; tn: dy^T x, the weight's),
// under the heuristic's first algorithm, and prints the rates as the
// products section of a time table (lib/Plan/TimeTables/, made by
// runtime/bench/time_tables.sh), then the epilogues' costs.
//
// --epilogues prints only those: how much longer a product takes with
// each epilogue training fuses (bias, bias and GELU, GELU's gradient, the
// bias gradient), in the layout it runs in, than the same product
// without, over the shapes of GPT-2 and Llama layers.
//
//===----------------------------------------------------------------------===//

#include "Arena.h"
#include "GemmTuning.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace plan = dsc::plan;
using namespace dsrun;

namespace {

/// The grid's sizes, each dimension alike: powers of two and GPT-2's 768.
const int64_t GridSizes[] = {128, 256, 512, 768, 1024, 2048, 4096, 8192,
                             16384, 32768};

struct Layout {
  const char *Name;
  bool TransA, TransB;
};
const Layout Layouts[] = {
    {"nt", false, true}, {"nn", false, false}, {"tn", true, false}};

/// Adds a bf16 product of layout L to P's kernels.
void addProduct(plan::Plan &P, const Layout &L, int64_t M, int64_t N,
                int64_t K, plan::GemmEpilogue Epilogue) {
  if (P.Values.empty()) {
    P.Values.resize(1);
    P.Values[0].Type = plan::DType::BF16;
  }
  plan::GemmAttrs G;
  G.M = M, G.N = N, G.K = K;
  G.TransA = L.TransA, G.TransB = L.TransB;
  G.LdA = L.TransA ? M : K;
  G.LdB = L.TransB ? K : N;
  G.LdC = N;
  G.Epilogue = Epilogue;
  plan::Kernel Kr;
  Kr.Name = L.Name;
  Kr.Attrs.emplace<size_t(plan::KernelKind::Gemm)>(G);
  Kr.Inputs.push_back({0, 0, {M, K}, {K, 1}});
  P.Kernels.push_back(std::move(Kr));
}

/// The epilogues section of a time table (indented under products): each
/// epilogue's time over the same product's without, the geometric mean
/// over layers of GPT-2 (768, 1600) and Llama (2048, 4096) at 1 k to 16 k
/// tokens, in the layout training fuses it into.
int printEpilogues(Matmuls &Products, cudaStream_t S, int Reps) {
  const int64_t Tokens[] = {1024, 4096, 16384};
  // A layer's (in, out) features.
  const std::pair<int64_t, int64_t> Layers[] = {
      {768, 3072}, {3072, 768}, {1600, 6400}, {6400, 1600},
      {2048, 5632}, {4096, 4096}};
  const struct {
    plan::GemmEpilogue Epilogue;
    const Layout &L;
  } Fused[] = {{plan::GemmEpilogue::Bias, Layouts[0]},
               {plan::GemmEpilogue::BiasGeluTanh, Layouts[0]},
               {plan::GemmEpilogue::DGeluTanh, Layouts[1]},
               {plan::GemmEpilogue::BiasGradB, Layouts[2]},
               {plan::GemmEpilogue::BiasGradA, Layouts[2]}};
  printf("  epilogues:\n");
  for (const auto &F : Fused) {
    // Each shape without, then with the epilogue: forward x W^T (tokens,
    // out, in); the input's gradient dy W (tokens, in, out); the weight's
    // dy^T x (out, in, tokens).
    plan::Plan P;
    for (int64_t T : Tokens)
      for (auto [In, Out] : Layers)
        for (plan::GemmEpilogue E : {plan::GemmEpilogue::None, F.Epilogue}) {
          if (F.L.TransA)
            addProduct(P, F.L, Out, In, T, E);
          else if (F.L.TransB)
            addProduct(P, F.L, T, Out, In, E);
          else
            addProduct(P, F.L, T, In, Out, E);
        }
    std::vector<ProductTiming> Timed;
    if (std::string E = timeProducts(P, Products, 1, Reps, S, Timed);
        !E.empty()) {
      fprintf(stderr, "dsrun-gemm-bench: %s\n", E.c_str());
      return 1;
    }
    double LogSum = 0;
    unsigned Pairs = 0;
    for (size_t I = 0; I + 1 < Timed.size(); I += 2)
      if (!Timed[I].Ms.empty() && !Timed[I + 1].Ms.empty() &&
          Timed[I].Ms[0] > 0 && Timed[I + 1].Ms[0] > 0) {
        LogSum += std::log(Timed[I + 1].Ms[0] / Timed[I].Ms[0]);
        ++Pairs;
      }
    if (Pairs)
      printf("    - { epilogue: %s, factor: %.3f }\n",
             plan::enumName(F.Epilogue), std::exp(LogSum / Pairs));
    else
      fprintf(stderr, "dsrun-gemm-bench: cuBLASLt runs no %s product\n",
              plan::enumName(F.Epilogue));
    fflush(stdout);
  }
  return 0;
}

/// The products section of a time table: per layout, TFLOP/s at every
/// (m, n, k) of the grid, m slowest, k fastest.
int printGrid(Matmuls &Products, cudaStream_t S, int Reps) {
  printf("products:\n  sizes: [");
  for (size_t I = 0; I < std::size(GridSizes); ++I)
    printf("%s%lld", I ? ", " : "", (long long)GridSizes[I]);
  printf("]\n");
  for (const Layout &L : Layouts) {
    plan::Plan P;
    for (int64_t M : GridSizes)
      for (int64_t N : GridSizes)
        for (int64_t K : GridSizes)
          addProduct(P, L, M, N, K, plan::GemmEpilogue::None);
    std::vector<ProductTiming> Timed;
    if (std::string E = timeProducts(P, Products, 1, Reps, S, Timed);
        !E.empty()) {
      fprintf(stderr, "dsrun-gemm-bench: %s\n", E.c_str());
      return 1;
    }
    printf("  %s: [", L.Name);
    for (size_t I = 0; I < Timed.size(); ++I) {
      const plan::GemmAttrs &G = Timed[I].Kernel->attrs<plan::KernelKind::Gemm>();
      double Ms = Timed[I].Ms.empty() ? 0 : Timed[I].Ms[0];
      double Tflops = Ms > 0 ? 2.0 * G.M * G.N * G.K / Ms / 1e9 : 0;
      printf("%s%s%.1f", I ? "," : "", I % 10 ? " " : "\n    ", Tflops);
    }
    printf("]\n");
    fflush(stdout);
  }
  return printEpilogues(Products, S, Reps);
}

} // namespace

int main(int Argc, char **Argv) {
  const char *Usage =
      "usage: dsrun-gemm-bench PLAN.bin [--candidates N] [--reps R]\n"
      "       dsrun-gemm-bench --grid [--reps R]\n"
      "       dsrun-gemm-bench --epilogues [--reps R]\n";
  std::string Path;
  int Candidates = 8, Reps = 20;
  bool Grid = false, EpiloguesOnly = false;
  for (int I = 1; I < Argc; ++I) {
    std::string A = Argv[I];
    if ((A == "--candidates" || A == "--reps") && I + 1 < Argc) {
      int V = atoi(Argv[++I]);
      if (V < 1 || V > 64) {
        fprintf(stderr, "dsrun-gemm-bench: %s takes 1 to 64\n", A.c_str());
        return 2;
      }
      (A == "--reps" ? Reps : Candidates) = V;
    } else if (A == "--grid" || A == "--epilogues") {
      Grid = true;
      EpiloguesOnly = A == "--epilogues";
    } else if (A[0] != '-' && Path.empty()) {
      Path = A;
    } else {
      fputs(Usage, stderr);
      return 2;
    }
  }
  if (Grid ? !Path.empty() : Path.empty()) {
    fputs(Usage, stderr);
    return 2;
  }
  std::optional<plan::Plan> P;
  if (!Grid) {
    std::string Error;
    bool Unreadable;
    P = loadPlanFile(Path, Error, Unreadable);
    if (!P) {
      fprintf(stderr, "dsrun-gemm-bench: %s\n", Error.c_str());
      return 1;
    }
  }
  Matmuls Products;
  if (std::string E = Products.init(); !E.empty()) {
    fprintf(stderr, "dsrun-gemm-bench: %s\n", E.c_str());
    return 2;
  }
  cudaStream_t S;
  cudaStreamCreate(&S);
  if (EpiloguesOnly)
    return printEpilogues(Products, S, Reps);
  if (Grid)
    return printGrid(Products, S, Reps);
  std::vector<ProductTiming> Timed;
  if (std::string E = timeProducts(*P, Products, Candidates, Reps, S, Timed);
      !E.empty()) {
    fprintf(stderr, "dsrun-gemm-bench: %s\n", E.c_str());
    return 1;
  }
  if (Timed.empty()) {
    fprintf(stderr, "dsrun-gemm-bench: %s has no products in its compute "
                    "program (plan it with a model)\n", Path.c_str());
    return 1;
  }
  printf("%s: %zu distinct products; the heuristic's first %d algorithms, "
         "%d launches each\n", Path.c_str(), Timed.size(), Candidates, Reps);
  printf("%-36s %5s %6s %6s %6s %5s %4s %9s %9s %5s %7s\n", "first kernel",
         "calls", "M", "N", "K", "batch", "epi", "first ms", "best ms",
         "best", "offered");
  double First = 0, Best = 0, Flops = 0;
  for (const ProductTiming &Pt : Timed) {
    if (Pt.Ms.empty()) {
      printf("%-36.36s  cuBLASLt offers no algorithm\n",
             Pt.Kernel->Name.c_str());
      continue;
    }
    size_t B = size_t(std::min_element(Pt.Ms.begin(), Pt.Ms.end()) -
                      Pt.Ms.begin());
    const dsc::plan::GemmAttrs &G =
        Pt.Kernel->attrs<dsc::plan::KernelKind::Gemm>();
    printf("%-36.36s %5u %6lld %6lld %6lld %5lld %14s %9.4f %9.4f %5zu %7zu\n",
           Pt.Kernel->Name.c_str(), Pt.Calls, (long long)G.M, (long long)G.N,
           (long long)G.K, (long long)G.Batch, dsc::plan::enumName(G.Epilogue),
           Pt.Ms[0], Pt.Ms[B], B, Pt.Ms.size());
    First += Pt.Ms[0] * Pt.Calls;
    Best += Pt.Ms[B] * Pt.Calls;
    Flops += 2.0 * double(G.M) * double(G.N) * double(G.K) * double(G.Batch) *
             Pt.Calls;
  }
  printf("one micro step's products: %.3f ms with the first algorithm "
         "(%.1f TFLOP/s), %.3f ms with the fastest of each (%.1f TFLOP/s): "
         "%.1f %% less; %zu products would carry a choice (%.0f %% margin)\n",
         First, First > 0 ? Flops / First / 1e9 : 0.0, Best,
         Best > 0 ? Flops / Best / 1e9 : 0.0,
         First > 0 ? 100 * (First - Best) / First : 0.0,
         fasterAlgorithms(Timed, CalibrationMargin).size(),
         100 * CalibrationMargin);
  return 0;
}
