//===- TokenData.h - Token files and the order ranks read them --*- C++ -*-===//
//
// Training data is a file of token ids in one of the two formats people
// already have:
//   nanoGPT   raw little-endian uint16 ids, nothing else;
//   llm.c     a 1024-byte header of 256 int32 (magic 20240520, version 1
//             for uint16 ids or 2 for uint32, the token count), then ids.
//
// A sample is a window of Seq + 1 consecutive tokens: the model reads the
// first Seq, the targets are the last Seq (the next token of each). The
// file holds (Tokens - 1) / Seq such windows back to back. Each epoch
// visits them in an order shuffled from the seed (Fisher-Yates driven by
// splitmix64, so runtime/bench/dsrun_data.py reproduces it exactly), and
// global sample G of the run is the (G mod W)-th window of epoch G / W.
// Step s, micro step m, rank r and row b read global sample
//   ((s - 1) * GAS + m) * World * B + r * B + b,
// so ranks read disjoint samples, and a global batch holds the same
// samples whatever the world size.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_TOKENDATA_H
#define DSRUN_TOKENDATA_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dsrun {

class TokenFile {
public:
  TokenFile() = default;
  TokenFile(TokenFile &&O) noexcept { *this = std::move(O); }
  TokenFile &operator=(TokenFile &&O) noexcept;
  ~TokenFile();

  /// Maps Path and reads its format; nullopt and Error on failure.
  static std::optional<TokenFile> open(const std::string &Path,
                                       std::string &Error);

  uint64_t tokens() const { return Count; }
  unsigned tokenBytes() const { return Width; }
  const char *format() const { return Headered ? "llm.c" : "nanoGPT"; }
  uint32_t operator[](uint64_t I) const {
    if (Width == 2) {
      uint16_t V;
      __builtin_memcpy(&V, Ids + 2 * I, 2);
      return V;
    }
    uint32_t V;
    __builtin_memcpy(&V, Ids + 4 * I, 4);
    return V;
  }
  /// The first position holding an id >= Limit, or tokens() if none.
  uint64_t firstAtLeast(uint64_t Limit) const;
  /// "" when every id is below Vocab; else which token is not, for an
  /// error message about the file.
  std::string idBeyond(uint64_t Vocab) const;

private:
  void *Map = nullptr;
  uint64_t MapBytes = 0;
  const unsigned char *Ids = nullptr;
  uint64_t Count = 0;
  unsigned Width = 2;
  bool Headered = false;
};

constexpr uint32_t LlmcMagic = 20240520;
/// llm.c's files of uint32 ids (its Llama 3 data): another magic, version 7.
constexpr uint32_t LlmcWideMagic = 20240801;

/// Which window each global sample reads.
class TokenSampler {
public:
  TokenSampler(uint64_t Tokens, uint64_t Seq, uint64_t Seed);
  uint64_t windows() const { return Windows; }
  /// The first token of global sample G's window.
  uint64_t start(uint64_t G);

private:
  uint64_t Windows, Seq, Seed;
  uint64_t Epoch = ~uint64_t(0);
  std::vector<uint32_t> Order;
};

/// The permutation of [0, N) an epoch visits windows in.
std::vector<uint32_t> shuffledWindows(uint64_t N, uint64_t Seed,
                                      uint64_t Epoch);

} // namespace dsrun

#endif
