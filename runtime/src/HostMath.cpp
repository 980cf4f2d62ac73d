//===- HostMath.cpp -------------------------------------------------------===//
//
// Compiled with -ffp-contract=off: the update must round exactly as the
// kernel, which is compiled with --fmad=false, does; and with
// -fno-math-errno, so that sqrtf vectorizes (no result changes).
//
//===----------------------------------------------------------------------===//

#include "HostMath.h"

#include "dsc/LrSchedule.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
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
  A.BiasCorrection1 =
      S.BiasCorrection ? float(1.0 - std::pow(double(A.Beta1), double(Step)))
                       : 1.0f;
  A.BiasCorrection2 =
      S.BiasCorrection ? float(1.0 - std::pow(double(A.Beta2), double(Step)))
                       : 1.0f;
  A.GradScale = S.AverageGradients ? 1.0f / float(S.WorldSize) : 1.0f;
  A.DecoupledDecay = S.DecoupledWeightDecay;
  A.BF16State = S.MasterDType == plan::DType::BF16;
  return A;
}

uint64_t nanosToRun(const std::function<void()> &Work) {
  auto Begin = std::chrono::steady_clock::now();
  Work();
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - Begin)
                      .count());
}

namespace {

/// Worker threads kept for the host's share of every step: a step calls
/// parallelFor hundreds of times (a conversion per gradient bucket), and
/// starting threads for each call cost more than small ones take.
class HostPool {
public:
  explicit HostPool(unsigned Workers) {
    for (unsigned T = 0; T < Workers; ++T)
      Threads.emplace_back([this] { serve(); });
  }
  ~HostPool() {
    {
      std::lock_guard<std::mutex> Lock(M);
      Stop = true;
    }
    Wake.notify_all();
    for (std::thread &T : Threads)
      T.join();
  }
  unsigned workers() const { return unsigned(Threads.size()); }

  /// Runs Task(K) for K < Count on the calling thread and at most Helpers
  /// workers. Tasks must not throw: a worker would still be running one.
  void run(unsigned Count, unsigned Helpers,
           const std::function<void(unsigned)> &Task) {
    std::unique_lock<std::mutex> Lock(M);
    Job = &Task;
    Tasks = Count;
    Next = Finished = Joined = 0;
    MaxJoined = Helpers;
    ++Generation;
    Wake.notify_all();
    work(Lock);
    Done.wait(Lock, [&] { return Finished == Tasks; });
    Job = nullptr;
  }

private:
  void serve() {
    std::unique_lock<std::mutex> Lock(M);
    uint64_t Seen = 0;
    for (;;) {
      Wake.wait(Lock, [&] { return Stop || Generation != Seen; });
      if (Stop)
        return;
      Seen = Generation;
      if (Joined < MaxJoined) {
        ++Joined;
        work(Lock);
      }
    }
  }
  /// Takes tasks until none is left; called with M held.
  void work(std::unique_lock<std::mutex> &Lock) {
    while (Job && Next < Tasks) {
      unsigned K = Next++;
      const std::function<void(unsigned)> &Task = *Job;
      Lock.unlock();
      Task(K);
      Lock.lock();
      if (++Finished == Tasks)
        Done.notify_all();
    }
  }

  std::mutex M;
  std::condition_variable Wake, Done;
  const std::function<void(unsigned)> *Job = nullptr;
  unsigned Tasks = 0, Next = 0, Finished = 0, Joined = 0, MaxJoined = 0;
  uint64_t Generation = 0;
  bool Stop = false;
  std::vector<std::thread> Threads;
};

/// One pool per process, grown to the most threads asked for. Host tasks
/// of different streams may ask at once: they take turns (so a task must
/// not call parallelTasks itself, and a caller's time counts the wait).
std::mutex PoolUse;
std::unique_ptr<HostPool> Pool;

} // namespace

void parallelTasks(unsigned Count, unsigned Threads,
                   const std::function<void(unsigned)> &Task) {
  Threads = std::max(1u, std::min(Threads, Count));
  if (Threads == 1) {
    for (unsigned K = 0; K < Count; ++K)
      Task(K);
    return;
  }
  std::lock_guard<std::mutex> Lock(PoolUse);
  if (!Pool || Pool->workers() < Threads - 1) {
    Pool.reset(); // Joins the old workers first.
    Pool = std::make_unique<HostPool>(Threads - 1);
  }
  Pool->run(Count, Threads - 1, Task);
}

void parallelFor(uint64_t N, unsigned Threads,
                 const std::function<void(uint64_t, uint64_t)> &Work) {
  // A task costs a few microseconds: not worth it for small ranges.
  Threads = std::max(1u, std::min<unsigned>(Threads, unsigned(N / 65536) + 1));
  parallelTasks(Threads, Threads, [&](unsigned T) {
    Work(N * T / Threads, N * (T + 1) / Threads);
  });
}

namespace {

// The loops below are written per element type so that the compiler
// vectorizes them (loadAs and storeAs switch per element); each computes
// exactly what the generic loop does, element by element.

/// The generic update of [Begin, End).
template <typename LoadGrad>
void adamwRange(const AdamW &A, LoadGrad Grad, float *__restrict Master,
                float *__restrict M, float *__restrict V, uint64_t Begin,
                uint64_t End) {
  for (uint64_t I = Begin; I < End; ++I)
    adamwUpdate(A, Grad(I), Master[I], M[I], V[I]);
}

// AVX2 where the processor has it: the update is the optimizer's main cost
// and nearly halves with eight lanes. Without contraction the vector
// instructions round as the scalar ones do.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DSRUN_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define DSRUN_VECTOR_CLONES
#endif

inline float gradValue(float G) { return G; }
inline float gradValue(uint16_t G) { return fromBF16(G); }

/// Gradients in G's type; the bf16 copy of the update into Params when it
/// is not null. Plain loops over restrict pointers and a local copy of the
/// step: otherwise the fp32 loop with the copy reloads the step's factors
/// every element and runs scalar (7x slower). Inlined into the per-type
/// functions below, which the compiler clones per instruction set (it does
/// not clone templates).
template <typename GradT>
inline __attribute__((always_inline)) void
adamwTyped(const AdamW &Step, const GradT *__restrict G,
           float *__restrict Master, float *__restrict M, float *__restrict V,
           uint16_t *__restrict Params, uint64_t Begin, uint64_t End) {
  // A local copy: the step's factors are then known not to change under
  // the stores, and stay in registers.
  const AdamW A = Step;
  if (!Params) {
    for (uint64_t I = Begin; I < End; ++I)
      adamwUpdate(A, gradValue(G[I]), Master[I], M[I], V[I]);
    return;
  }
  for (uint64_t I = Begin; I < End; ++I) {
    adamwUpdate(A, gradValue(G[I]), Master[I], M[I], V[I]);
    Params[I] = toBF16(Master[I]);
  }
}

DSRUN_VECTOR_CLONES void adamwF32(const AdamW &A, const float *G,
                                  float *Master, float *M, float *V,
                                  uint16_t *Params, uint64_t Begin,
                                  uint64_t End) {
  adamwTyped(A, G, Master, M, V, Params, Begin, End);
}

DSRUN_VECTOR_CLONES void adamwBF16(const AdamW &A, const uint16_t *G,
                                   float *Master, float *M, float *V,
                                   uint16_t *Params, uint64_t Begin,
                                   uint64_t End) {
  adamwTyped(A, G, Master, M, V, Params, Begin, End);
}

} // namespace

void hostAdamW(const AdamW &A, const void *Grad, ElementType GradType,
               float *Master, float *M, float *V, uint64_t N,
               unsigned Threads, void *Params, ElementType ParamType) {
  // The typed loops write a bf16 copy; another copy type, or gradients of
  // another type, take a second pass after the update.
  bool Typed = GradType == ElementType::F32 || GradType == ElementType::BF16;
  bool Fused = Typed && Params && ParamType == ElementType::BF16;
  uint16_t *P = Fused ? static_cast<uint16_t *>(Params) : nullptr;
  parallelFor(N, Threads, [&](uint64_t Begin, uint64_t End) {
    if (GradType == ElementType::F32)
      adamwF32(A, static_cast<const float *>(Grad), Master, M, V, P, Begin,
               End);
    else if (GradType == ElementType::BF16)
      adamwBF16(A, static_cast<const uint16_t *>(Grad), Master, M, V, P,
                Begin, End);
    else
      adamwRange(
          A, [&](uint64_t I) { return loadAs(Grad, I, GradType); }, Master, M,
          V, Begin, End);
  });
  if (Params && !Fused)
    convertOnHost(Params, ParamType, Master, ElementType::F32, N, false,
                  Threads);
}

void convertOnHost(void *Dst, ElementType DstType, const void *Src,
                   ElementType SrcType, uint64_t N, bool Accumulate,
                   unsigned Threads) {
  parallelFor(N, Threads, [&](uint64_t Begin, uint64_t End) {
    using E = ElementType;
    if (DstType == E::F32 && SrcType == E::BF16) {
      float *__restrict D = static_cast<float *>(Dst);
      const uint16_t *__restrict S = static_cast<const uint16_t *>(Src);
      if (Accumulate)
        for (uint64_t I = Begin; I < End; ++I)
          D[I] = fromBF16(S[I]) + D[I];
      else
        for (uint64_t I = Begin; I < End; ++I)
          D[I] = fromBF16(S[I]);
      return;
    }
    if (DstType == E::BF16 && SrcType == E::F32 && !Accumulate) {
      uint16_t *__restrict D = static_cast<uint16_t *>(Dst);
      const float *__restrict S = static_cast<const float *>(Src);
      for (uint64_t I = Begin; I < End; ++I)
        D[I] = toBF16(S[I]);
      return;
    }
    if (DstType == E::BF16 && SrcType == E::BF16) {
      // Stage 3's offloaded gradients, accumulated over micro steps.
      uint16_t *__restrict D = static_cast<uint16_t *>(Dst);
      const uint16_t *__restrict S = static_cast<const uint16_t *>(Src);
      if (Accumulate)
        for (uint64_t I = Begin; I < End; ++I)
          D[I] = toBF16(fromBF16(S[I]) + fromBF16(D[I]));
      else
        for (uint64_t I = Begin; I < End; ++I)
          D[I] = toBF16(fromBF16(S[I]));
      return;
    }
    if (DstType == E::F32 && SrcType == E::F32) {
      float *__restrict D = static_cast<float *>(Dst);
      const float *__restrict S = static_cast<const float *>(Src);
      if (Accumulate)
        for (uint64_t I = Begin; I < End; ++I)
          D[I] = S[I] + D[I];
      else
        for (uint64_t I = Begin; I < End; ++I)
          D[I] = S[I];
      return;
    }
    for (uint64_t I = Begin; I < End; ++I) {
      float V = loadAs(Src, I, SrcType);
      if (Accumulate)
        V += loadAs(Dst, I, DstType);
      storeAs(Dst, I, DstType, V);
    }
  });
}

double hostTriadBytesPerSec(unsigned Threads) {
  constexpr uint64_t N = uint64_t(64) << 20;
  std::unique_ptr<float[]> A(new (std::nothrow) float[N]),
      B(new (std::nothrow) float[N]), C(new (std::nothrow) float[N]);
  if (!A || !B || !C)
    return 0;
  float *__restrict Pa = A.get(), *__restrict Pb = B.get(),
                    *__restrict Pc = C.get();
  // Touched first by the threads that stream them, so that on a NUMA host
  // the pages sit near them.
  parallelFor(N, Threads, [&](uint64_t Lo, uint64_t Hi) {
    for (uint64_t I = Lo; I < Hi; ++I)
      Pa[I] = 0, Pb[I] = 1, Pc[I] = 2;
  });
  double Best = 0;
  for (int Pass = 0; Pass < 4; ++Pass) {
    uint64_t Nanos = nanosToRun([&] {
      parallelFor(N, Threads, [&](uint64_t Lo, uint64_t Hi) {
        for (uint64_t I = Lo; I < Hi; ++I)
          Pa[I] = Pb[I] + 3.0f * Pc[I];
      });
    });
    if (Nanos)
      Best = std::max(Best, 16.0 * double(N) / (double(Nanos) / 1e9));
  }
  // Read back, so that the passes are work the compiler must do.
  return Pa[N / 2] == 7.0f && Pa[N - 1] == 7.0f ? Best : 0;
}

double sumOfSquares(const void *Grads, ElementType Type, uint64_t N,
                    unsigned Threads) {
  constexpr unsigned Chunks = 64;
  double Part[Chunks] = {};
  parallelTasks(Chunks, Threads, [&](unsigned K) {
    uint64_t Begin = N * K / Chunks, End = N * (K + 1) / Chunks;
    double Sum = 0;
    if (Type == ElementType::F32) {
      const float *G = static_cast<const float *>(Grads);
      for (uint64_t I = Begin; I < End; ++I)
        Sum += double(G[I]) * double(G[I]);
    } else if (Type == ElementType::BF16) {
      const uint16_t *G = static_cast<const uint16_t *>(Grads);
      for (uint64_t I = Begin; I < End; ++I) {
        double V = fromBF16(G[I]);
        Sum += V * V;
      }
    } else {
      for (uint64_t I = Begin; I < End; ++I) {
        double V = loadAs(Grads, I, Type);
        Sum += V * V;
      }
    }
    Part[K] = Sum;
  });
  double Total = 0;
  for (double V : Part)
    Total += V;
  return Total;
}

std::vector<AdamW> adamwSchedule(const plan::Info &S, uint32_t Steps,
                                 std::string &Error) {
  std::vector<AdamW> Schedule;
  for (uint32_t Step = 1; Step <= Steps; ++Step)
    Schedule.push_back(adamwFor(S, Step, Error));
  return Schedule;
}

float reducedGradient(const plan::Plan &P, uint32_t Tensor, uint64_t Elem,
                      uint32_t Step, const std::vector<float> *Reduced) {
  const plan::Info &S = P.Settings;
  float Grad = 0;
  for (uint32_t Micro = 0; Micro < S.GradAccum; ++Micro) {
    if (!Reduced) {
      for (uint32_t Rank = 0; Rank < S.WorldSize; ++Rank)
        Grad += syntheticGrad(Rank, Step, Micro, Tensor, Elem);
      continue;
    }
    float Left = (*Reduced)[(uint64_t(Step - 1) * S.GradAccum + Micro) *
                                P.Tensors[Tensor].Elems +
                            Elem];
    Grad = storedValue(Micro ? Grad + Left : Left,
                       ElementType(S.GradAccumDType));
  }
  return Grad;
}

ElementState expectedState(const plan::Plan &P, uint32_t Tensor, uint64_t Elem,
                           const std::vector<AdamW> &Schedule,
                           const std::vector<float> *Reduced) {
  ElementType Param = ElementType(P.Settings.ParamDType);
  ElementState E;
  // The fp32 master starts as the stored 16-bit weight.
  E.Master = storedValue(initialWeight(Tensor, Elem), Param);
  for (uint32_t Step = 1; Step <= Schedule.size(); ++Step)
    adamwUpdate(Schedule[Step - 1],
                reducedGradient(P, Tensor, Elem, Step, Reduced), E.Master,
                E.M, E.V);
  return E;
}

} // namespace dsrun
