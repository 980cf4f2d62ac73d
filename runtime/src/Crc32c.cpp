//===- Crc32c.cpp - CRC-32C of the bytes dsrun writes ---------------------===//

#include "Crc32c.h"

#include <array>
#include <cstdio>
#include <cstring>
#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace dsrun {

namespace {

uint32_t crc32cTable(uint32_t Crc, const char *Data, uint64_t N) {
  static const std::array<uint32_t, 256> Table = [] {
    std::array<uint32_t, 256> T{};
    for (uint32_t I = 0; I < 256; ++I) {
      uint32_t C = I;
      for (int K = 0; K < 8; ++K)
        C = C & 1 ? (C >> 1) ^ 0x82F63B78u : C >> 1;
      T[I] = C;
    }
    return T;
  }();
  for (uint64_t I = 0; I < N; ++I)
    Crc = Table[(Crc ^ uint8_t(Data[I])) & 0xff] ^ (Crc >> 8);
  return Crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32cSse(uint32_t Crc,
                                                       const char *Data,
                                                       uint64_t N) {
  uint64_t C = Crc;
  for (; N >= 8; N -= 8, Data += 8) {
    uint64_t Word;
    memcpy(&Word, Data, 8);
    C = _mm_crc32_u64(C, Word);
  }
  return crc32cTable(uint32_t(C), Data, N);
}
#endif

} // namespace

uint32_t crc32c(uint32_t Crc, const char *Data, uint64_t N) {
  Crc = ~Crc;
#if defined(__x86_64__)
  static const bool Sse = __builtin_cpu_supports("sse4.2");
  Crc = Sse ? crc32cSse(Crc, Data, N) : crc32cTable(Crc, Data, N);
#else
  Crc = crc32cTable(Crc, Data, N);
#endif
  return ~Crc;
}

std::string crc32cText(uint32_t Crc) {
  char Text[9];
  snprintf(Text, sizeof(Text), "%08x", Crc);
  return Text;
}

} // namespace dsrun
