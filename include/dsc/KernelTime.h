//===- KernelTime.h - How long the planner expects a kernel to take -*- C++ -*-===//
//
// One model, on both sides: dsc plan estimates each compute kernel's time
// with it, and dsrun --calibration-out fits its rates to what a profiled
// step measured, so that the next plan's estimate is this machine's.
//
//   time = max(flops / flop rate, bytes / byte rate) + the gap between
//          two kernels on the compute stream
//
// The rates are the kind's measured ones (Hardware::KernelRates), else
// the machine's dense matmul and memory rates. A measured kind has one
// rate, on the dimension that bounds it.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELTIME_H
#define DSC_KERNELTIME_H

#include "dsc/PlanFormat.h"

#include <algorithm>
#include <cstdint>

namespace dsc::plan {

inline uint64_t nanosAt(uint64_t Amount, uint64_t PerSec) {
  return PerSec ? uint64_t(double(Amount) * 1e9 / double(PerSec)) : 0;
}

/// The measured rate of K's kind and direction, or null.
inline const KernelRate *measuredRate(const Kernel &K, const Hardware &H) {
  const char *Name = enumName(K.kind());
  for (const KernelRate &R : H.KernelRates)
    if (R.Backward == K.Backward && R.Kind == Name)
      return &R;
  return nullptr;
}

inline uint64_t kernelNanos(const Kernel &K, const Hardware &H) {
  uint64_t FlopRate = H.DenseFlopsPerSec, ByteRate = H.MemoryBytesPerSec;
  if (const KernelRate *R = measuredRate(K, H))
    FlopRate = R->FlopsPerSec, ByteRate = R->BytesPerSec;
  return std::max(nanosAt(K.Flops, FlopRate), nanosAt(K.Bytes, ByteRate)) +
         H.KernelGapNanos;
}

/// The rate a kind achieved: Flops and Bytes done in Nanos by its kernels
/// of one direction. The dimension that bounds it under the machine's
/// figures gets the measured rate, the other none.
inline KernelRate fitKernelRate(KernelKind Kind, bool Backward, double Flops,
                                double Bytes, double Nanos,
                                const Hardware &H) {
  KernelRate R;
  R.Kind = enumName(Kind);
  R.Backward = Backward;
  if (Nanos <= 0)
    return R;
  double FlopTime = H.DenseFlopsPerSec ? Flops / double(H.DenseFlopsPerSec) : 0,
         ByteTime = H.MemoryBytesPerSec ? Bytes / double(H.MemoryBytesPerSec) : 0;
  if (FlopTime >= ByteTime && Flops > 0)
    R.FlopsPerSec = uint64_t(Flops / Nanos * 1e9);
  else if (Bytes > 0)
    R.BytesPerSec = uint64_t(Bytes / Nanos * 1e9);
  return R;
}

} // namespace dsc::plan

#endif
