//===- FastDivmod.h - Division by a divisor fixed at launch -----*- C++ -*-===//
//
// A kernel that walks a strided tensor splits each element's index into
// per-dim indices: one division and one remainder per dim. A 32-bit
// division by a value known only at run time costs about twenty
// instructions; by a multiplier and a shift chosen once on the host it
// costs three (Granlund and Montgomery's round-up method).
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_FASTDIVMOD_H
#define DSRUN_FASTDIVMOD_H

#include <cstdint>

#ifdef __CUDACC__
#define DSRUN_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define DSRUN_HOST_DEVICE inline
#endif

namespace dsrun {

/// Divides numerators below 2^31 by a divisor in [1, 2^31).
struct FastDivmod {
  uint32_t Divisor = 1, Multiplier = 0, Shift = 0;

  FastDivmod() = default;
  explicit FastDivmod(uint32_t D) : Divisor(D) {
    // Shift = ceil(log2 D); Multiplier = floor(2^32 (2^Shift - D) / D) + 1,
    // which fits in 32 bits because 2^Shift < 2 D.
    while ((uint64_t(1) << Shift) < D)
      ++Shift;
    Multiplier = uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << Shift) - D)) /
                              D + 1);
  }

  DSRUN_HOST_DEVICE uint32_t quotient(uint32_t N) const {
#ifdef __CUDA_ARCH__
    uint32_t High = __umulhi(N, Multiplier);
#else
    uint32_t High = uint32_t((uint64_t(N) * Multiplier) >> 32);
#endif
    // High <= N < 2^31: the sum does not overflow.
    return (High + N) >> Shift;
  }

  /// N / Divisor, with N % Divisor in Remainder.
  DSRUN_HOST_DEVICE uint32_t divmod(uint32_t N, uint32_t &Remainder) const {
    uint32_t Q = quotient(N);
    Remainder = N - Q * Divisor;
    return Q;
  }
};

} // namespace dsrun

#endif
