//===- KernelTests.cu - Every kernel of a plan, GPU against the host ------===//
//
//   dsrun-kernel-test PLAN.bin... [--seed N]
//
// Gives every value of the plan's compute program device storage of its
// own, fills parameters, inputs and targets at random (token ids inside
// the vocabulary, some targets ignored), then runs the kernels in program
// order. Before each kernel the host reference (dsc/ReferenceExecutor.h)
// takes the device's current inputs, so every kernel is compared alone,
// from the same operands: ||gpu - host|| / ||host|| per output, within
// 1e-4 for fp32 plans and 2e-2 for 16-bit ones (the GPU stores its outputs
// rounded). Prints one line per kernel kind and exits 1 on any failure.
//
//===----------------------------------------------------------------------===//

#include "ComputeKernels.h"
#include "Arena.h"

#include "dsc/ReferenceExecutor.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>

namespace plan = dsc::plan;
using namespace dsrun;

#define CHECK(Call)                                                            \
  do {                                                                         \
    cudaError_t E_ = (Call);                                                   \
    if (E_ != cudaSuccess) {                                                   \
      fprintf(stderr, "%s failed: %s\n", #Call, cudaGetErrorString(E_));       \
      exit(2);                                                                 \
    }                                                                          \
  } while (0)

namespace {

struct Stats {
  unsigned Kernels = 0, Failed = 0;
  double Worst = 0;
};

int testPlan(const std::string &Path, uint64_t Seed,
             std::map<std::string, Stats> &ByKind) {
  std::string Error;
  bool Unreadable;
  std::optional<plan::Plan> Loaded = loadPlanFile(Path, Error, Unreadable);
  if (!Loaded) {
    fprintf(stderr, "%s\n", Error.c_str());
    return 1;
  }
  const plan::Plan &P = *Loaded;
  bool Half = P.Settings.ParamDType != plan::DType::F32;
  double Tolerance = Half ? 2e-2 : 1e-4;
  size_t NV = P.Values.size();
  std::vector<void *> Device(NV, nullptr);
  std::vector<ElementType> Type(NV);
  for (size_t V = 0; V < NV; ++V) {
    Type[V] = ElementType(P.Values[V].Type);
    CHECK(cudaMalloc(&Device[V], std::max<uint64_t>(
                                     16, P.Values[V].Elems * elementBytes(Type[V]))));
    CHECK(cudaMemset(Device[V], 0, P.Values[V].Elems * elementBytes(Type[V])));
  }
  uint64_t Workspace = 256;
  for (const plan::Kernel &K : P.Kernels)
    Workspace = std::max(Workspace, K.WorkspaceBytes);
  void *Work = nullptr;
  CHECK(cudaMalloc(&Work, Workspace));

  // Vocabulary and classes: what the gathers and the loss accept.
  std::vector<int64_t> Limit(NV, 0);
  for (const plan::Kernel &K : P.Kernels) {
    if (const auto *G = std::get_if<plan::GatherAttrs>(&K.Attrs))
      Limit[K.Inputs[1].Value] = G->Dim;
    if (const auto *L = std::get_if<plan::CrossEntropyAttrs>(&K.Attrs))
      Limit[K.Inputs[1].Value] = L->Classes;
  }
  dsc::reference::Executor Host(P.Values, P.Constants);
  std::mt19937_64 Rng(Seed);
  std::normal_distribution<float> Normal(0.0f, 0.1f);
  auto Upload = [&](size_t V) {
    dsc::reference::Span &S = Host.storage(uint32_t(V));
    std::vector<char> Bytes(S.size() * elementBytes(Type[V]));
    for (size_t I = 0; I < S.size(); ++I) {
      storeAs(Bytes.data(), I, Type[V], S[I]);
      S[I] = loadAs(Bytes.data(), I, Type[V]); // As the device holds it.
    }
    CHECK(cudaMemcpy(Device[V], Bytes.data(), Bytes.size(),
                     cudaMemcpyHostToDevice));
  };
  auto Download = [&](size_t V) {
    dsc::reference::Span &S = Host.storage(uint32_t(V));
    std::vector<char> Bytes(S.size() * elementBytes(Type[V]));
    CHECK(cudaMemcpy(Bytes.data(), Device[V], Bytes.size(),
                     cudaMemcpyDeviceToHost));
    for (size_t I = 0; I < S.size(); ++I)
      S[I] = loadAs(Bytes.data(), I, Type[V]);
  };
  for (size_t V = 0; V < NV; ++V) {
    const plan::Value &X = P.Values[V];
    dsc::reference::Span &S = Host.storage(uint32_t(V));
    switch (X.Kind) {
    case plan::ValueKind::Param:
      for (float &F : S)
        F = Normal(Rng);
      if (X.Name.find("norm") != std::string::npos ||
          X.Name.find("ln_") != std::string::npos)
        for (float &F : S)
          F += 1.0f; // Norm weights around one.
      break;
    case plan::ValueKind::Input:
    case plan::ValueKind::Target: {
      int64_t L = Limit[V] ? Limit[V] : 2;
      for (float &F : S) {
        F = float(Rng() % uint64_t(L));
        if (X.Kind == plan::ValueKind::Target && Rng() % 10 == 0)
          F = -100;
      }
      if (plan::isFloatType(X.Type))
        for (float &F : S)
          F = Normal(Rng) * 10;
      break;
    }
    default:
      break;
    }
    Upload(V);
  }

  cublasHandle_t Cublas;
  if (cublasCreate(&Cublas) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cublasCreate failed\n");
    return 2;
  }
  Matmuls Products;
  if (!Products.init().empty()) {
    fprintf(stderr, "cuBLASLt could not start\n");
    return 2;
  }
  KernelContext C{Cublas, &Products, Work, Workspace, Seed};
  int Failures = 0;
  for (size_t Ki = 0; Ki < P.Kernels.size(); ++Ki) {
    const plan::Kernel &K = P.Kernels[Ki];
    for (const plan::TensorRef &R : K.Inputs)
      Download(R.Value);
    for (const plan::TensorRef &R : K.Outputs)
      Download(R.Value); // Partial writes (a concat's part) keep the rest.
    std::string Problem = Host.run(K, Seed);
    if (!Problem.empty()) {
      fprintf(stderr, "%s: kernel %zu (%s): host: %s\n", Path.c_str(), Ki,
              K.Name.c_str(), Problem.c_str());
      return 1;
    }
    KernelOperands Ops;
    for (const plan::TensorRef &R : K.Inputs) {
      Ops.In.push_back(static_cast<char *>(Device[R.Value]) +
                       R.Offset * elementBytes(Type[R.Value]));
      Ops.InType.push_back(Type[R.Value]);
    }
    for (const plan::TensorRef &R : K.Outputs) {
      Ops.Out.push_back(static_cast<char *>(Device[R.Value]) +
                        R.Offset * elementBytes(Type[R.Value]));
      Ops.OutType.push_back(Type[R.Value]);
    }
    if (kernelWorkspaceBytes(K, Ops) > K.WorkspaceBytes &&
        kernelWorkspaceBytes(K, Ops) > 16) {
      fprintf(stderr, "%s: kernel %zu (%s) needs %llu bytes of workspace, "
              "the plan gives it %llu\n", Path.c_str(), Ki, K.Name.c_str(),
              (unsigned long long)kernelWorkspaceBytes(K, Ops),
              (unsigned long long)K.WorkspaceBytes);
      ++Failures;
    }
    Problem = launchComputeKernel(K, Ops, C, nullptr);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    if (!Problem.empty()) {
      fprintf(stderr, "%s: kernel %zu (%s): %s\n", Path.c_str(), Ki,
              K.Name.c_str(), Problem.c_str());
      return 1;
    }
    Stats &St = ByKind[plan::enumName(K.kind())];
    ++St.Kernels;
    for (const plan::TensorRef &R : K.Outputs) {
      std::vector<float> Want = Host.storage(R.Value).copy();
      Download(R.Value);
      const dsc::reference::Span &Got = Host.storage(R.Value);
      double Diff = 0, Norm = 0;
      for (size_t I = 0; I < Want.size(); ++I) {
        double D = double(Got[I]) - double(Want[I]);
        Diff += D * D;
        Norm += double(Want[I]) * double(Want[I]);
      }
      double Rel = Norm > 0 ? std::sqrt(Diff / Norm) : std::sqrt(Diff);
      if (!std::isfinite(Rel))
        Rel = INFINITY;
      St.Worst = std::max(St.Worst, Rel);
      if (Rel > Tolerance && std::sqrt(Diff) > 1e-6 * std::sqrt(Want.size())) {
        ++St.Failed;
        ++Failures;
        fprintf(stderr, "%s: kernel %zu (%s, %s) output %s: relative error "
                "%.3g above %.0e\n", Path.c_str(), Ki, plan::enumName(K.kind()),
                K.Name.c_str(), P.Values[R.Value].Name.c_str(), Rel,
                Tolerance);
      }
    }
  }
  cublasDestroy(Cublas);
  for (void *D : Device)
    cudaFree(D);
  cudaFree(Work);
  printf("%s: %zu kernels, %d failed\n", Path.c_str(), P.Kernels.size(),
         Failures);
  return Failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  uint64_t Seed = 1;
  std::vector<std::string> Plans;
  for (int I = 1; I < argc; ++I) {
    if (!strcmp(argv[I], "--seed") && I + 1 < argc)
      Seed = std::strtoull(argv[++I], nullptr, 10);
    else
      Plans.push_back(argv[I]);
  }
  if (Plans.empty()) {
    fprintf(stderr, "usage: dsrun-kernel-test PLAN.bin... [--seed N]\n");
    return 2;
  }
  int Result = 0;
  std::map<std::string, Stats> ByKind;
  for (const std::string &P : Plans)
    Result |= testPlan(P, Seed, ByKind);
  printf("%-20s %8s %7s %12s\n", "kind", "kernels", "failed", "worst error");
  for (const auto &[Kind, St] : ByKind)
    printf("%-20s %8u %7u %12.3g\n", Kind.c_str(), St.Kernels, St.Failed,
           St.Worst);
  return Result;
}
