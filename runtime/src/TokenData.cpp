//===- TokenData.cpp - Token files and the order ranks read them ----------===//

#include "TokenData.h"

#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dsrun {

TokenFile &TokenFile::operator=(TokenFile &&O) noexcept {
  std::swap(Map, O.Map);
  std::swap(MapBytes, O.MapBytes);
  std::swap(Ids, O.Ids);
  std::swap(Count, O.Count);
  std::swap(Width, O.Width);
  std::swap(Headered, O.Headered);
  return *this;
}

TokenFile::~TokenFile() {
  if (Map)
    munmap(Map, MapBytes);
}

std::optional<TokenFile> TokenFile::open(const std::string &Path,
                                         std::string &Error) {
  int Fd = ::open(Path.c_str(), O_RDONLY);
  if (Fd < 0) {
    Error = Path + ": cannot open the token file: " + strerror(errno);
    return std::nullopt;
  }
  struct stat St;
  if (fstat(Fd, &St) != 0 || !S_ISREG(St.st_mode)) {
    Error = Path + ": not a regular file";
    ::close(Fd);
    return std::nullopt;
  }
  uint64_t Bytes = uint64_t(St.st_size);
  TokenFile F;
  if (Bytes) {
    F.Map = mmap(nullptr, Bytes, PROT_READ, MAP_PRIVATE, Fd, 0);
    if (F.Map == MAP_FAILED) {
      F.Map = nullptr;
      Error = Path + ": cannot map the token file: " + strerror(errno);
      ::close(Fd);
      return std::nullopt;
    }
    F.MapBytes = Bytes;
  }
  ::close(Fd);
  const unsigned char *Data = static_cast<const unsigned char *>(F.Map);
  int32_t Header[3] = {0, 0, 0};
  if (Bytes >= 1024)
    memcpy(Header, Data, sizeof(Header));
  bool Wide = uint32_t(Header[0]) == LlmcWideMagic;
  if (Bytes >= 1024 && (uint32_t(Header[0]) == LlmcMagic || Wide)) {
    if (Wide ? Header[1] != 7 : Header[1] != 1 && Header[1] != 2) {
      Error = Path + ": an llm.c token file of magic " +
              std::to_string(uint32_t(Header[0])) + " and version " +
              std::to_string(Header[1]) + "; dsrun reads magic " +
              std::to_string(LlmcMagic) + " version 1 (uint16 ids) or 2 "
              "(uint32), and magic " + std::to_string(LlmcWideMagic) +
              " version 7 (uint32)";
      return std::nullopt;
    }
    F.Headered = true;
    F.Width = Header[1] == 1 ? 2 : 4;
    F.Count = uint64_t(uint32_t(Header[2]));
    F.Ids = Data + 1024;
    if (1024 + F.Count * F.Width > Bytes) {
      Error = Path + ": the llm.c header promises " + std::to_string(F.Count) +
              " tokens but the file holds " +
              std::to_string((Bytes - 1024) / F.Width) +
              " (a truncated file?)";
      return std::nullopt;
    }
    return F;
  }
  if (Bytes % 2) {
    Error = Path + ": " + std::to_string(Bytes) +
            " bytes is not a whole number of uint16 ids: neither a nanoGPT "
            "token file (raw uint16) nor an llm.c one (magic " +
            std::to_string(LlmcMagic) + " in its header)";
    return std::nullopt;
  }
  F.Width = 2;
  F.Count = Bytes / 2;
  F.Ids = Data;
  return F;
}

uint64_t TokenFile::firstAtLeast(uint64_t Limit) const {
  for (uint64_t I = 0; I < Count; ++I)
    if ((*this)[I] >= Limit)
      return I;
  return Count;
}

std::string TokenFile::idBeyond(uint64_t Vocab) const {
  uint64_t Bad = firstAtLeast(Vocab);
  if (Bad == Count)
    return "";
  return "token " + std::to_string(Bad) + " is id " +
         std::to_string((*this)[Bad]) + ", beyond the model's vocabulary of " +
         std::to_string(Vocab);
}

namespace {
uint64_t splitmix(uint64_t &State) {
  State += 0x9e3779b97f4a7c15ull;
  uint64_t Z = State;
  Z = (Z ^ (Z >> 30)) * 0xbf58476d1ce4e5b9ull;
  Z = (Z ^ (Z >> 27)) * 0x94d049bb133111ebull;
  return Z ^ (Z >> 31);
}
} // namespace

std::vector<uint32_t> shuffledWindows(uint64_t N, uint64_t Seed,
                                      uint64_t Epoch) {
  std::vector<uint32_t> Order(N);
  for (uint64_t I = 0; I < N; ++I)
    Order[I] = uint32_t(I);
  uint64_t State = Seed ^ (Epoch * 0xd1b54a32d192ed03ull);
  for (uint64_t I = N; I-- > 1;) {
    uint64_t J = splitmix(State) % (I + 1);
    std::swap(Order[I], Order[J]);
  }
  return Order;
}

TokenSampler::TokenSampler(uint64_t Tokens, uint64_t Seq, uint64_t Seed)
    : Windows(Tokens > Seq ? (Tokens - 1) / Seq : 0), Seq(Seq), Seed(Seed) {}

uint64_t TokenSampler::start(uint64_t G) {
  uint64_t E = G / Windows;
  if (E != Epoch) {
    Order = shuffledWindows(Windows, Seed, E);
    Epoch = E;
  }
  return uint64_t(Order[G % Windows]) * Seq;
}

} // namespace dsrun
