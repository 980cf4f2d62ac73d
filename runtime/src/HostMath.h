//===- HostMath.h - The host optimizer and its reference ------*- C++ -*-===//

#ifndef DSRUN_HOSTMATH_H
#define DSRUN_HOSTMATH_H

#include "Synthetic.h"

#include "dsc/PlanFormat.h"

#include <functional>
#include <string>
#include <vector>

namespace dsrun {

/// The AdamW factors of a step (1-based), from the plan's hyperparameters.
/// Error is set when they do not parse.
AdamW adamwFor(const dsc::plan::Info &Settings, uint32_t Step,
               std::string &Error);

/// Runs Work and returns how long it took on the host clock, in
/// nanoseconds: host work is timed inside its own callback.
uint64_t nanosToRun(const std::function<void()> &Work);

/// Runs Task(K) for every K < Count on up to Threads threads (a pool kept
/// for the process, and the caller).
void parallelTasks(unsigned Count, unsigned Threads,
                   const std::function<void(unsigned)> &Task);

/// Runs Work(Begin, End) over [0, N) split among up to Threads threads.
void parallelFor(uint64_t N, unsigned Threads,
                 const std::function<void(uint64_t, uint64_t)> &Work);

/// Dst[i] (+)= Src[i] for i < N, converting types, on Threads threads: the
/// host side of an offload copy.
void convertOnHost(void *Dst, ElementType DstType, const void *Src,
                   ElementType SrcType, uint64_t N, bool Accumulate,
                   unsigned Threads);

/// DeepSpeedCPUAdam's job: one AdamW step over N elements on the host,
/// gradients read in GradType, on Threads threads; with Params, the
/// updated weights' 16-bit copy written in the same pass (as
/// DeepSpeedCPUAdam's adam_update_copy does), rounded as convertOnHost
/// rounds.
void hostAdamW(const AdamW &A, const void *Grad, ElementType GradType,
               float *Master, float *M, float *V, uint64_t N, unsigned Threads,
               void *Params = nullptr,
               ElementType ParamType = ElementType::BF16);

/// What the optimizer state of element E of tensor T must be after Steps
/// synthetic steps of a plan: the reference dsrun --verify compares with.
struct ElementState {
  float Master = 0, M = 0, V = 0;
};
/// The gradient element Elem of a tensor has when step Step (from 1)
/// reaches its optimizer, before the step's scale: its synthetic values
/// summed over micro steps and ranks; or, where the reduction is not
/// exact (ZeRO++ qgZ's quantized gradients), what it left the element in
/// each micro step, Reduced[((Step - 1) x micro steps + Micro) x elements
/// + Elem], accumulated as the gradient partition's type rounds.
float reducedGradient(const dsc::plan::Plan &P, uint32_t Tensor,
                      uint64_t Elem, uint32_t Step,
                      const std::vector<float> *Reduced = nullptr);
/// Schedule holds adamwFor(step) for steps 1..N (computed once: parsing
/// per element would dominate the check).
ElementState expectedState(const dsc::plan::Plan &P, uint32_t Tensor,
                           uint64_t Elem, const std::vector<AdamW> &Schedule,
                           const std::vector<float> *Reduced = nullptr);
std::vector<AdamW> adamwSchedule(const dsc::plan::Info &Settings,
                                 uint32_t Steps, std::string &Error);

/// The host's memory bandwidth by STREAM's triad (a = b + s c over three
/// float arrays of 256 MiB, the best of four passes) on Threads threads of
/// the pool the optimizer uses: what the host optimizer's rate is held
/// against. Counted as the memory moves it, 16 bytes an element: STREAM
/// counts 12, but writing a reads it first, where every array AdamW
/// writes it reads anyway. 0 when the arrays cannot be had.
double hostTriadBytesPerSec(unsigned Threads);

/// The sum of the squares of N gradients in Type, as doubles: in 64 fixed
/// chunks, each summed in order, then the chunks in order, so that the
/// same gradients give the same norm on any number of threads.
double sumOfSquares(const void *Grads, ElementType Type, uint64_t N,
                    unsigned Threads);

/// The 16-bit (or fp32) value of a parameter's element as stored.
inline float storedValue(float Master, ElementType T) {
  switch (T) {
  case ElementType::F32:
    return Master;
  case ElementType::F16:
    return fromFP16(toFP16(Master));
  default:
    return fromBF16(toBF16(Master));
  }
}

} // namespace dsrun

#endif
