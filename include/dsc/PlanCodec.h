//===- PlanCodec.h - plan.bin, written and read -----------------*- C++ -*-===//
//
// plan.bin layout (little-endian; docs/plan-format.md):
//   header   "DSCPLAN\0", u32 version, u32 section count, u64 file size,
//            u64 FNV-1a checksum of every byte after the header
//   sections table: per section u32 id, u32 reserved, u64 offset, u64 size
//   sections, each the visit() encoding of one part of the plan
// A reader skips sections it does not know. Dependency-free, like
// PlanFormat.h: lib/PlanFormat/PlanCodec.cpp is built into dsc and dsrun.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PLANCODEC_H
#define DSC_PLANCODEC_H

#include "dsc/PlanFormat.h"

#include <cstddef>
#include <optional>

namespace dsc::plan {

inline uint64_t fnv1a(const uint8_t *Data, size_t Size,
                      uint64_t Hash = 14695981039346656037ull) {
  for (size_t I = 0; I < Size; ++I)
    Hash = (Hash ^ Data[I]) * 1099511628211ull;
  return Hash;
}

/// Encodes a plan as plan.bin bytes.
std::vector<uint8_t> writePlan(const Plan &P);

/// Decodes plan.bin bytes. On failure returns nullopt and sets Error to
/// what is wrong and what to do.
std::optional<Plan> readPlan(const uint8_t *Data, size_t Size,
                             std::string &Error);

} // namespace dsc::plan

#endif
