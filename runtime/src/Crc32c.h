//===- Crc32c.h - CRC-32C of the bytes dsrun writes -------------*- C++ -*-===//
//
// Checkpoint shards and the safetensors files dsrun writes carry CRC-32C
// (Castagnoli, reflected: the checksum of iSCSI and ext4) of their bytes,
// so that a damaged file is refused where it is read rather than trained
// on. The SSE 4.2 instruction computes it where the CPU has one (about
// 20 GB/s a core), a table otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_CRC32C_H
#define DSRUN_CRC32C_H

#include <cstdint>
#include <string>

namespace dsrun {

/// Extends a running CRC-32C (start at 0) by N bytes.
uint32_t crc32c(uint32_t Crc, const char *Data, uint64_t N);

/// A checksum as eight lower-case hex digits, as safetensors metadata
/// holds it.
std::string crc32cText(uint32_t Crc);

} // namespace dsrun

#endif
