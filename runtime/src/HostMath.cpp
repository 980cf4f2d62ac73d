//===- HostMath.cpp -------------------------------------------------------===//
//
// Compiled with -ffp-contract=off: the update must round exactly as the
// kernel, which is compiled with --fmad=false, does.
//
//===----------------------------------------------------------------------===//

#include "HostMath.h"

#include "dsc/LrSchedule.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <thread>
#include <vector>

namespace plan = dsc::plan;

namespace dsrun {

static bool parseFloat(const std::string &Text, float &Out) {
  char *End = nullptr;
  Out = strtof(Text.c_str(), &End);
  return !Text.empty() && *End == 0 && std::isfinite(Out);
}

AdamW adamwFor(const plan::Info &S, uint32_t Step, std::string &Error) {
  AdamW A{};
  if (!parseFloat(S.LearningRate, A.Lr) || !parseFloat(S.Beta1, A.Beta1) ||
      !parseFloat(S.Beta2, A.Beta2) || !parseFloat(S.Epsilon, A.Eps) ||
      !parseFloat(S.WeightDecay, A.WeightDecay))
    Error = "the plan's optimizer settings are not numbers";
  if (!S.Scheduler.empty()) {
    dsc::schedule::Schedule Sched;
    if (std::string Problem = Sched.parse(S.Scheduler, S.SchedulerParams);
        !Problem.empty())
      Error = Problem;
    dsc::schedule::Hyper H = Sched.at(Step, A.Lr, A.Beta1, A.Beta2);
    A.Lr = float(H.Lr);
    A.Beta1 = float(H.Beta1);
    A.Beta2 = float(H.Beta2);
  }
  A.BiasCorrection1 = float(1.0 - std::pow(double(A.Beta1), double(Step)));
  A.BiasCorrection2 = float(1.0 - std::pow(double(A.Beta2), double(Step)));
  A.GradScale = 1.0f / float(S.WorldSize);
  return A;
}

uint64_t nanosToRun(const std::function<void()> &Work) {
  auto Begin = std::chrono::steady_clock::now();
  Work();
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - Begin)
                      .count());
}

void parallelFor(uint64_t N, unsigned Threads,
                 const std::function<void(uint64_t, uint64_t)> &Work) {
  // A thread costs tens of microseconds: not worth it for small ranges.
  Threads = std::max(1u, std::min<unsigned>(Threads, unsigned(N / 65536) + 1));
  std::vector<std::thread> Pool;
  for (unsigned T = 1; T < Threads; ++T)
    Pool.emplace_back(Work, N * T / Threads, N * (T + 1) / Threads);
  Work(0, N / Threads);
  for (std::thread &T : Pool)
    T.join();
}

void hostAdamW(const AdamW &A, const void *Grad, ElementType GradType,
               float *Master, float *M, float *V, uint64_t N,
               unsigned Threads) {
  parallelFor(N, Threads, [&](uint64_t Begin, uint64_t End) {
    for (uint64_t I = Begin; I < End; ++I)
      adamwUpdate(A, loadAs(Grad, I, GradType), Master[I], M[I], V[I]);
  });
}

void convertOnHost(void *Dst, ElementType DstType, const void *Src,
                   ElementType SrcType, uint64_t N, bool Accumulate,
                   unsigned Threads) {
  parallelFor(N, Threads, [&](uint64_t Begin, uint64_t End) {
    for (uint64_t I = Begin; I < End; ++I) {
      float V = loadAs(Src, I, SrcType);
      if (Accumulate)
        V += loadAs(Dst, I, DstType);
      storeAs(Dst, I, DstType, V);
    }
  });
}

std::vector<AdamW> adamwSchedule(const plan::Info &S, uint32_t Steps,
                                 std::string &Error) {
  std::vector<AdamW> Schedule;
  for (uint32_t Step = 1; Step <= Steps; ++Step)
    Schedule.push_back(adamwFor(S, Step, Error));
  return Schedule;
}

ElementState expectedState(const plan::Plan &P, uint32_t Tensor, uint64_t Elem,
                           const std::vector<AdamW> &Schedule) {
  const plan::Info &S = P.Settings;
  ElementType Param = ElementType(S.ParamDType);
  ElementState E;
  // The fp32 master starts as the stored 16-bit weight.
  E.Master = storedValue(initialWeight(Tensor, Elem), Param);
  for (uint32_t Step = 1; Step <= Schedule.size(); ++Step) {
    float Grad = 0;
    for (uint32_t Micro = 0; Micro < S.GradAccum; ++Micro)
      for (uint32_t Rank = 0; Rank < S.WorldSize; ++Rank)
        Grad += syntheticGrad(Rank, Step, Micro, Tensor, Elem);
    adamwUpdate(Schedule[Step - 1], Grad, E.Master, E.M, E.V);
  }
  return E;
}

} // namespace dsrun
