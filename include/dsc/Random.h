//===- Random.h - Dropout's counter-based random numbers --------*- C++ -*-===//
//
// A dropout mask is a pure function of (seed, stream, element): the
// compiler's reference interpreter and dsrun's kernels compute the same
// bits, and a checkpointed layer recomputed inside backward draws the same
// mask as its forward did, with nothing stored. The seed changes every
// micro step; the stream names the dropout op. The mixing is splitmix64's
// finalizer (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", 2014), applied to the three words in turn.
//
// Dependency-free, and usable from CUDA device code.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_RANDOM_H
#define DSC_RANDOM_H

#include <cstdint>

#if defined(__CUDACC__)
#define DSC_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define DSC_HOST_DEVICE inline
#endif

namespace dsc {

DSC_HOST_DEVICE uint64_t mix64(uint64_t Z) {
  Z = (Z ^ (Z >> 30)) * 0xbf58476d1ce4e5b9ull;
  Z = (Z ^ (Z >> 27)) * 0x94d049bb133111ebull;
  return Z ^ (Z >> 31);
}

/// A uniform number in [0, 1) with 24 random bits.
DSC_HOST_DEVICE float dropoutUniform(uint64_t Seed, uint64_t Stream,
                                     uint64_t Element) {
  uint64_t H = mix64(Seed + 0x9e3779b97f4a7c15ull);
  H = mix64(H ^ (Stream * 0x9e3779b97f4a7c15ull));
  H = mix64(H ^ Element);
  return float(uint32_t(H >> 40)) * (1.0f / 16777216.0f);
}

/// Whether dropout with probability Ratio keeps the element.
DSC_HOST_DEVICE bool dropoutKeeps(uint64_t Seed, uint64_t Stream,
                                  uint64_t Element, float Ratio) {
  return dropoutUniform(Seed, Stream, Element) >= Ratio;
}

} // namespace dsc

#undef DSC_HOST_DEVICE

#endif
