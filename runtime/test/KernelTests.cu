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
// rounded). Then ZeRO++ qgZ's three kernels, every rank of a few node
// layouts simulated on this GPU and the all-to-alls done by copies,
// against the host's quantizer bit for bit, and their speed on the
// Llama-3-8B shape's largest gradient. Prints one line per kernel kind
// and exits 1 on any failure.
//
//===----------------------------------------------------------------------===//

#include "ComputeKernels.h"
#include "Arena.h"
#include "Checks.h"
#include "Kernels.h"
#include "Quantize.h"

#include "dsc/ReferenceExecutor.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>

namespace plan = dsc::plan;
using namespace dsrun;

// Checks.h's way out, which dsrun's executor gives; here, the message.
void dsrun::fatalError(const std::string &Message) {
  fprintf(stderr, "dsrun-kernel-test: %s\n", Message.c_str());
  exit(2);
}
std::string dsrun::whereNow() { return ""; }

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

/// ZeRO++ qgZ: one bucket of gradients of Shapes over Nodes x PerNode
/// ranks, each rank's gradients random fp16 whose groups' magnitudes span
/// 2^-20 to 2^4 (and a group of zeros), quantized, exchanged by copies as
/// the all-to-alls would, summed and requantized, exchanged again and
/// summed: every rank's partitions against qgzReducePartition, bit for
/// bit. Returns the mismatches; Elems counts the elements compared.
/// Misaligned: the gradients 2 bytes off a 16-byte boundary, as one after
/// an unquantized gradient of odd size can be in a bucket.
uint64_t testQgzCase(uint32_t Nodes, uint32_t PerNode,
                     const std::vector<std::vector<int64_t>> &Shapes,
                     std::mt19937_64 &Rng, uint64_t &Elems,
                     bool Misaligned = false) {
  uint64_t Off = Misaligned ? 2 : 0;
  uint32_t W = Nodes * PerNode;
  plan::Plan P;
  P.Settings.WorldSize = W;
  P.Settings.Nodes = Nodes;
  P.Settings.GpusPerNode = PerNode;
  P.Settings.ZeroStage = 3;
  P.Settings.QuantizedGradients = true;
  P.Buckets.resize(1);
  for (const std::vector<int64_t> &Shape : Shapes) {
    plan::Tensor T;
    T.Shape = Shape;
    T.Elems = 1;
    for (int64_t D : Shape)
      T.Elems *= uint64_t(D);
    T.ShardElems = (T.Elems + W - 1) / W;
    P.Buckets[0].Segments.push_back(
        {uint32_t(P.Tensors.size()), 0, T.Elems});
    P.Tensors.push_back(T);
  }
  plan::QgzLayout L = plan::qgzLayout(P, 0);
  std::normal_distribution<float> Normal;
  std::uniform_int_distribution<int> Exponent(-20, 4);
  // Rank r's gradient of tensor t, fp16 bits.
  std::vector<std::vector<std::vector<uint16_t>>> Grad(W);
  std::vector<char *> Work(W);
  std::vector<std::vector<void *>> Whole(W), Part(W);
  for (uint32_t R = 0; R < W; ++R) {
    CHECK(cudaMalloc(&Work[R], std::max<uint64_t>(L.Bytes, 1)));
    CHECK(cudaMemset(Work[R], 0, std::max<uint64_t>(L.Bytes, 1)));
    for (const plan::QgzLayout::Piece &Pc : L.Pieces) {
      const plan::Tensor &T = P.Tensors[Pc.Tensor];
      std::vector<uint16_t> G(T.Elems);
      for (uint64_t Base = 0; Base < T.Elems; Base += Pc.Q.GroupSize) {
        float Scale = std::ldexp(1.0f, Exponent(Rng));
        bool Zero = (Base / Pc.Q.GroupSize) % 7 == 3;
        for (uint64_t I = Base; I < Base + Pc.Q.GroupSize; ++I)
          G[I] = toFP16(Zero ? 0.0f : Normal(Rng) * Scale);
      }
      char *D = nullptr, *O = nullptr;
      CHECK(cudaMalloc(&D, T.Elems * 2 + Off));
      CHECK(cudaMalloc(&O, T.Elems / W * 2 + Off));
      D += Off, O += Off;
      CHECK(cudaMemcpy(D, G.data(), T.Elems * 2, cudaMemcpyHostToDevice));
      Grad[R].push_back(std::move(G));
      Whole[R].push_back(D);
      Part[R].push_back(O);
    }
  }
  auto Shape = [&](const plan::QgzLayout::Piece &Pc) {
    return qgzShape(P.Settings, L, Pc, P.Tensors[Pc.Tensor]);
  };
  for (uint32_t R = 0; R < W; ++R)
    for (size_t K = 0; K < L.Pieces.size(); ++K)
      launchQgzQuantize(Work[R] + L.Send1, Whole[R][K], Shape(L.Pieces[K]),
                        nullptr);
  // An all-to-all among the ranks Rank(0..Peers-1): each one's block p
  // of Send lands in peer p's Recv at the sender's place.
  auto Exchange = [&](uint64_t Send, uint64_t Recv, uint64_t Block,
                      uint32_t Peers, auto Rank) {
    for (uint32_t To = 0; To < Peers; ++To)
      for (uint32_t From = 0; From < Peers; ++From)
        CHECK(cudaMemcpy(Work[Rank(To)] + Recv + From * Block,
                         Work[Rank(From)] + Send + To * Block, Block,
                         cudaMemcpyDeviceToDevice));
  };
  // Within each node, then among the ranks of one place on every node.
  for (uint32_t M = 0; M < Nodes; ++M)
    Exchange(L.Send1, L.Recv1, L.Block1, PerNode,
             [&](uint32_t J) { return M * PerNode + J; });
  for (uint32_t R = 0; R < W; ++R)
    for (size_t K = 0; K < L.Pieces.size(); ++K)
      launchQgzSum(Work[R] + L.Send2, Work[R] + L.Recv1, Shape(L.Pieces[K]),
                   nullptr);
  for (uint32_t Li = 0; Li < PerNode; ++Li)
    Exchange(L.Send2, L.Recv2, L.Block2, Nodes,
             [&](uint32_t M) { return M * PerNode + Li; });
  for (uint32_t R = 0; R < W; ++R)
    for (size_t K = 0; K < L.Pieces.size(); ++K)
      launchQgzFinish(Part[R][K], Work[R] + L.Recv2, Shape(L.Pieces[K]),
                      float(PerNode), nullptr);
  CHECK(cudaDeviceSynchronize());
  uint64_t Bad = 0;
  for (uint32_t R = 0; R < W; ++R)
    for (size_t K = 0; K < L.Pieces.size(); ++K) {
      const plan::QgzLayout::Piece &Pc = L.Pieces[K];
      uint64_t N = P.Tensors[Pc.Tensor].Elems / W;
      std::vector<float> Want = qgzReducePartition(
          N, Pc.Q.GroupSize, Nodes, PerNode, float(PerNode),
          [&](uint32_t Q, uint64_t I) {
            return fromFP16(Grad[Q][K][R * N + I]);
          });
      std::vector<uint16_t> Got(N);
      CHECK(cudaMemcpy(Got.data(), Part[R][K], N * 2, cudaMemcpyDeviceToHost));
      for (uint64_t I = 0; I < N; ++I)
        if (floatBits(fromFP16(Got[I])) != floatBits(Want[I]) && Bad++ < 3)
          fprintf(stderr, "qgz %ux%u: rank %u tensor %zu element %llu: "
                          "expected %.9g, found %.9g\n",
                  Nodes, PerNode, R, K, (unsigned long long)I, Want[I],
                  fromFP16(Got[I]));
      Elems += N;
    }
  for (uint32_t R = 0; R < W; ++R) {
    cudaFree(Work[R]);
    for (void *D : Whole[R])
      cudaFree(static_cast<char *>(D) - Off);
    for (void *D : Part[R])
      cudaFree(static_cast<char *>(D) - Off);
  }
  return Bad;
}

/// qgZ's kernels against the host, then their time on one rank of 2 x 2
/// for the 8B shape's MLP gradient (14336 x 4096): the bytes each reads
/// and writes over its time, beside the GPU's copy rate.
int testQgz(uint64_t Seed) {
  std::mt19937_64 Rng(Seed);
  uint64_t Bad = 0, Elems = 0;
  // Two gradients in one bucket (the second's blocks after the first's);
  // 4 GPUs a node; one GPU a node (the exchange within it a copy), with
  // a 1-D gradient that goes unquantized.
  Bad += testQgzCase(2, 2, {{64, 48}, {96, 64}}, Rng, Elems);
  Bad += testQgzCase(2, 4, {{256, 128}}, Rng, Elems);
  Bad += testQgzCase(4, 1, {{96, 32}, {128}, {32, 64}}, Rng, Elems);
  Bad += testQgzCase(3, 2, {{384, 96}}, Rng, Elems);
  Bad += testQgzCase(2, 2, {{64, 48}}, Rng, Elems, /*Misaligned=*/true);
  printf("qgz: %llu elements over 5 node layouts, %llu differ from the host\n",
         (unsigned long long)Elems, (unsigned long long)Bad);

  plan::Plan P;
  P.Settings.WorldSize = 4;
  P.Settings.Nodes = 2;
  P.Settings.GpusPerNode = 2;
  P.Settings.ZeroStage = 3;
  P.Settings.QuantizedGradients = true;
  plan::Tensor T;
  T.Shape = {14336, 4096};
  T.Elems = 14336ull * 4096;
  T.ShardElems = T.Elems / 4;
  P.Tensors.push_back(T);
  P.Buckets.resize(1);
  P.Buckets[0].Segments.push_back({0, 0, T.Elems});
  plan::QgzLayout L = plan::qgzLayout(P, 0);
  QgzShape Q = qgzShape(P.Settings, L, L.Pieces[0], T);
  char *Work = nullptr, *Grad = nullptr, *Copy = nullptr;
  CHECK(cudaMalloc(&Work, L.Bytes));
  CHECK(cudaMalloc(&Grad, T.Elems * 2));
  CHECK(cudaMalloc(&Copy, T.Elems * 2));
  CHECK(cudaMemset(Work, 0, L.Bytes));
  CHECK(cudaMemset(Grad, 0x3c, T.Elems * 2));
  cudaEvent_t E[5];
  for (cudaEvent_t &X : E)
    CHECK(cudaEventCreate(&X));
  const int Reps = 10;
  for (int Pass = 0; Pass < 2; ++Pass) { // The first warms up.
    CHECK(cudaEventRecord(E[0]));
    for (int I = 0; I < Reps; ++I)
      launchQgzQuantize(Work + L.Send1, Grad, Q, nullptr);
    CHECK(cudaEventRecord(E[1]));
    for (int I = 0; I < Reps; ++I)
      launchQgzSum(Work + L.Send2, Work + L.Recv1, Q, nullptr);
    CHECK(cudaEventRecord(E[2]));
    for (int I = 0; I < Reps; ++I)
      launchQgzFinish(Copy, Work + L.Recv2, Q, 2.0f, nullptr);
    CHECK(cudaEventRecord(E[3]));
    for (int I = 0; I < Reps; ++I)
      CHECK(cudaMemcpyAsync(Copy, Grad, T.Elems * 2, cudaMemcpyDeviceToDevice));
    CHECK(cudaEventRecord(E[4]));
  }
  CHECK(cudaEventSynchronize(E[4]));
  float Ms[4];
  for (int K = 0; K < 4; ++K)
    CHECK(cudaEventElapsedTime(&Ms[K], E[K], E[K + 1]));
  // Bytes read and written: fp16 in, 4 bits and scales out; the node's
  // blocks in, the nodes' blocks out (read twice: the largest magnitude,
  // then the bytes); the nodes' blocks in, the partition out in fp16.
  double Bytes[4] = {double(T.Elems) * 2 + double(2 * L.Block1),
                     double(2 * L.Block1) * 2 + double(2 * L.Block2),
                     double(2 * L.Block2) + double(T.Elems) / 4 * 2,
                     double(T.Elems) * 4};
  const char *Name[4] = {"quantize", "sum", "finish", "cudaMemcpy"};
  for (int K = 0; K < 4; ++K)
    printf("qgz %-10s 14336 x 4096, 2 x 2 ranks: %7.1f us, %6.0f GB/s\n",
           Name[K], 1e3 * Ms[K] / Reps, Bytes[K] / (Ms[K] / Reps * 1e-3) / 1e9);
  for (cudaEvent_t X : E)
    cudaEventDestroy(X);
  cudaFree(Work);
  cudaFree(Grad);
  cudaFree(Copy);
  return Bad ? 1 : 0;
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
  Result |= testQgz(Seed);
  printf("%-20s %8s %7s %12s\n", "kind", "kernels", "failed", "worst error");
  for (const auto &[Kind, St] : ByKind)
    printf("%-20s %8u %7u %12.3g\n", Kind.c_str(), St.Kernels, St.Failed,
           St.Worst);
  return Result;
}
