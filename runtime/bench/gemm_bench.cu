//===- gemm_bench.cu - Each product of a plan under each algorithm --------===//
//
//   dsrun-gemm-bench PLAN.bin [--candidates N] [--reps R]
//
// Prints, for each distinct product of the plan's compute program, the
// time a launch takes under the algorithm cuBLASLt's heuristic puts first
// and under the fastest of its first N (GemmTuning.h), and the totals
// weighted by how often a micro step runs each product: what dsrun
// --calibration-out would have the plan choose, and what it saves. Needs
// the plan alone (operands of random values).
//
//===----------------------------------------------------------------------===//

#include "Arena.h"
#include "GemmTuning.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace plan = dsc::plan;
using namespace dsrun;

int main(int Argc, char **Argv) {
  const char *Usage =
      "usage: dsrun-gemm-bench PLAN.bin [--candidates N] [--reps R]\n";
  std::string Path;
  int Candidates = 8, Reps = 20;
  for (int I = 1; I < Argc; ++I) {
    std::string A = Argv[I];
    if ((A == "--candidates" || A == "--reps") && I + 1 < Argc) {
      int V = atoi(Argv[++I]);
      if (V < 1 || V > 64) {
        fprintf(stderr, "dsrun-gemm-bench: %s takes 1 to 64\n", A.c_str());
        return 2;
      }
      (A == "--reps" ? Reps : Candidates) = V;
    } else if (A[0] != '-' && Path.empty()) {
      Path = A;
    } else {
      fputs(Usage, stderr);
      return 2;
    }
  }
  if (Path.empty()) {
    fputs(Usage, stderr);
    return 2;
  }
  std::string Error;
  bool Unreadable;
  std::optional<plan::Plan> P = loadPlanFile(Path, Error, Unreadable);
  if (!P) {
    fprintf(stderr, "dsrun-gemm-bench: %s\n", Error.c_str());
    return 1;
  }
  Matmuls Products;
  if (std::string E = Products.init(); !E.empty()) {
    fprintf(stderr, "dsrun-gemm-bench: %s\n", E.c_str());
    return 2;
  }
  cudaStream_t S;
  cudaStreamCreate(&S);
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
