//===- ModelProgram.cpp - The plan's kernels, ready to launch -------------===//

#include "ModelProgram.h"

#include "Checks.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace plan = dsc::plan;

namespace dsrun {

std::string ModelProgram::resolve(const plan::Plan &Plan,
                                  const std::vector<char *> &ValueAddress,
                                  void *Workspace, uint64_t WorkspaceBytes,
                                  cublasHandle_t Cublas, Matmuls *Products) {
  P = &Plan;
  Context = KernelContext{Cublas, Products, Workspace, WorkspaceBytes, 0};
  Operands.assign(Plan.Kernels.size(), {});
  for (size_t K = 0; K < Plan.Kernels.size(); ++K) {
    const plan::Kernel &Kr = Plan.Kernels[K];
    KernelOperands &Ops = Operands[K];
    for (int Out = 0; Out < 2; ++Out)
      for (const plan::TensorRef &R : Out ? Kr.Outputs : Kr.Inputs) {
        const plan::Value &V = Plan.Values[R.Value];
        char *Base = ValueAddress[R.Value];
        if (!Base)
          return "kernel " + std::to_string(K) + " (" + Kr.Name +
                 ") uses value '" + V.Name + "', which has no place on the "
                 "device";
        ElementType T = ElementType(V.Type);
        (Out ? Ops.Out : Ops.In).push_back(Base + R.Offset * elementBytes(T));
        (Out ? Ops.OutType : Ops.InType).push_back(T);
      }
    uint64_t Need = kernelWorkspaceBytes(Kr, Ops);
    if (Need > WorkspaceBytes)
      return "kernel " + std::to_string(K) + " (" + Kr.Name + ") needs " +
             std::to_string(Need) + " bytes of workspace and the plan's "
             "kernel_workspace holds " + std::to_string(WorkspaceBytes) +
             " (a plan from an older dsc? plan again)";
  }
  return "";
}

std::string ModelProgram::run(uint32_t Begin, uint32_t End, uint64_t Seed,
                              cudaStream_t S, bool Inference) {
  KernelContext C = Context;
  C.Seed = Seed;
  C.Inference = Inference;
  ++Calls;
  for (uint32_t K = Begin; K < End; ++K) {
    Timed T{K, nullptr, nullptr, Calls, S};
    if (Profiling) {
      T.Begin = nextEvent(), T.End = nextEvent();
      CHECK_CUDA(cudaEventRecord(T.Begin, S));
    }
    std::string Problem = launchComputeKernel(P->Kernels[K], Operands[K], C, S);
    // Every launch checked where it happens, so a failure names its kernel.
    if (cudaError_t E = cudaGetLastError(); Problem.empty() && E != cudaSuccess)
      Problem = std::string("its launch failed: ") + cudaGetErrorString(E);
    if (Profiling) {
      CHECK_CUDA(cudaEventRecord(T.End, S));
      Launches.push_back(T);
    }
    if (!Problem.empty())
      return "kernel " + std::to_string(K) + " (" + P->Kernels[K].Name +
             "): " + Problem;
  }
  return "";
}

void ModelProgram::beginHooks(cudaStream_t S) {
  if (!Profiling)
    return;
  HooksBegin = nextEvent();
  CHECK_CUDA(cudaEventRecord(HooksBegin, S));
}

void ModelProgram::endHooks(cudaStream_t S) {
  if (!Profiling || !HooksBegin)
    return;
  Timed T{NoKernel, HooksBegin, nextEvent(), Calls, S};
  CHECK_CUDA(cudaEventRecord(T.End, S));
  Launches.push_back(T);
  HooksBegin = nullptr;
}

std::string ModelProgram::gapReport() const {
  struct Sum {
    double Ms = 0, Max = 0;
    unsigned Count = 0;
  } Inside, Between;
  struct Gap {
    double Ms;
    size_t After;
  };
  std::vector<Gap> Largest;
  for (size_t I = 1; I < Launches.size(); ++I) {
    const Timed &A = Launches[I - 1], &B = Launches[I];
    if (A.Stream != B.Stream)
      continue;
    float Ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&Ms, A.End, B.Begin));
    Sum &S = A.Call == B.Call ? Inside : Between;
    S.Ms += Ms;
    S.Max = std::max(S.Max, double(Ms));
    ++S.Count;
    if (A.Call != B.Call)
      Largest.push_back({Ms, I - 1});
  }
  std::sort(Largest.begin(), Largest.end(),
            [](const Gap &X, const Gap &Y) { return X.Ms > Y.Ms; });
  std::string Out;
  char Line[320];
  for (auto [What, S] : {std::pair<const char *, Sum>{"inside", Inside},
                         {"between", Between}}) {
    snprintf(Line, sizeof(Line),
             "  idle %s instructions: %.3f ms in %u gaps (mean %.1f us, "
             "largest %.1f us)\n",
             What, S.Ms, S.Count, S.Count ? 1e3 * S.Ms / S.Count : 0.0,
             1e3 * S.Max);
    Out += Line;
  }
  auto Name = [&](const Timed &T) {
    return T.Kernel == NoKernel
               ? std::string("the gradient hooks")
               : std::to_string(T.Kernel) + " " + P->Kernels[T.Kernel].Name;
  };
  for (size_t I = 0; I < std::min<size_t>(8, Largest.size()); ++I) {
    const Timed &A = Launches[Largest[I].After],
                &B = Launches[Largest[I].After + 1];
    snprintf(Line, sizeof(Line), "    %.1f us after %s, before %s\n",
             1e3 * Largest[I].Ms, Name(A).c_str(), Name(B).c_str());
    Out += Line;
  }
  return Out;
}

cudaEvent_t ModelProgram::nextEvent() {
  if (EventsUsed == Events.size()) {
    cudaEvent_t E;
    CHECK_CUDA(cudaEventCreate(&E));
    Events.push_back(E);
  }
  return Events[EventsUsed++];
}

std::string ModelProgram::profileReport(double StepMs) {
  struct Sum {
    double Ms = 0, PlannedMs = 0, Flops = 0, Bytes = 0;
    unsigned Launches = 0;
  };
  std::map<std::string, Sum> ByKind;
  std::vector<Sum> ByKernel(P->Kernels.size());
  Profiled.clear();
  double Total = 0, PlannedTotal = 0, HooksMs = 0;
  unsigned Hooks = 0;
  for (const Timed &T : Launches) {
    float Ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&Ms, T.Begin, T.End));
    if (T.Kernel == NoKernel) {
      HooksMs += Ms;
      ++Hooks;
      continue;
    }
    const dsc::plan::Kernel &K = P->Kernels[T.Kernel];
    auto Same = [&](const KindTime &X) {
      return X.Kind == K.kind() && X.Backward == K.Backward;
    };
    auto It = std::find_if(Profiled.begin(), Profiled.end(), Same);
    if (It == Profiled.end())
      It = Profiled.insert(Profiled.end(), KindTime{K.kind(), K.Backward});
    for (Sum *S : {&ByKind[dsc::plan::kindLabel(K)], &ByKernel[T.Kernel]}) {
      S->Ms += Ms;
      S->PlannedMs += double(K.PlannedNanos) / 1e6;
      S->Flops += double(K.Flops);
      S->Bytes += double(K.Bytes);
      ++S->Launches;
    }
    It->Ms += Ms;
    It->Flops += double(K.Flops);
    It->Bytes += double(K.Bytes);
    ++It->Launches;
    Total += Ms;
    PlannedTotal += double(K.PlannedNanos) / 1e6;
  }
  std::string Gaps = gapReport();
  Launches.clear();
  EventsUsed = 0;

  std::string Out;
  char Line[320];
  // Planned: the plan's estimate of the same launches, each alone (the
  // time table's, or the machine's figures): where the estimate misses.
  auto Row = [&](const std::string &What, const Sum &S) {
    snprintf(Line, sizeof(Line),
             "  %-44.44s %6u %9.3f %9.3f %5.1f%% %8.1f %8.1f\n", What.c_str(),
             S.Launches, S.Ms, S.PlannedMs, Total > 0 ? 100 * S.Ms / Total : 0,
             S.Ms > 0 ? S.Flops / S.Ms / 1e9 : 0,
             S.Ms > 0 ? S.Bytes / S.Ms / 1e6 : 0);
    Out += Line;
  };
  snprintf(Line, sizeof(Line),
           "dsrun: kernel profile of one step: %.3f ms in kernels of a "
           "%.3f ms step (events around each launch); the plan expects "
           "%.3f ms of them\n"
           "  %-44s %6s %9s %9s %6s %8s %8s\n",
           Total, StepMs, PlannedTotal, "kind", "calls", "ms", "planned",
           "share", "TFLOP/s", "GB/s");
  Out += Line;
  std::vector<std::pair<std::string, Sum>> Kinds(ByKind.begin(), ByKind.end());
  std::sort(Kinds.begin(), Kinds.end(),
            [](auto &A, auto &B) { return A.second.Ms > B.second.Ms; });
  for (auto &[Kind, S] : Kinds)
    Row(Kind, S);
  if (Hooks) {
    snprintf(Line, sizeof(Line),
             "  gradient hooks after %u backward instructions: %.3f ms\n",
             Hooks, HooksMs);
    Out += Line;
  }
  Out += Gaps;
  std::vector<uint32_t> Order(P->Kernels.size());
  for (uint32_t K = 0; K < Order.size(); ++K)
    Order[K] = K;
  std::sort(Order.begin(), Order.end(), [&](uint32_t A, uint32_t B) {
    return ByKernel[A].Ms > ByKernel[B].Ms;
  });
  Out += "  the costliest kernels:\n";
  for (size_t I = 0; I < std::min<size_t>(40, Order.size()); ++I)
    if (ByKernel[Order[I]].Launches)
      Row(std::to_string(Order[I]) + " " + P->Kernels[Order[I]].Name,
          ByKernel[Order[I]]);
  return Out;
}

} // namespace dsrun
