//===- ShardFuzzer.cpp - libFuzzer target: dsrun's checkpoint shards ------===//
//
// Arbitrary bytes as a checkpoint shard (rank<R>.ckpt): --resume and
// dsrun-reshard open one and read its parts, whole, piece by piece and
// against their checksums. A
// damaged or forged shard must be an error, never a crash or a read past
// what the header promised.
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"
#include "MemFile.h"

#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  std::string Path = memFileOf(Data, Size);
  if (Path.empty())
    return 0;
  std::string Error;
  dsrun::ShardReader Shard;
  if (Shard.open(Path, Error)) {
    // Every part whole, in order, then a piece of each at its middle.
    uint64_t Total = 0;
    bool Ok = Shard.read(
        [&](size_t, uint64_t, uint64_t N, const char *) {
          Total += N;
          return true;
        },
        Error);
    if (Ok) {
      uint64_t Promised = 0;
      for (const dsrun::CheckpointPart &P : Shard.parts())
        Promised += P.Bytes;
      if (Total != Promised)
        __builtin_trap();
    }
    // Every block against its checksum (dsrun-reshard --check).
    (void)Shard.verify(Error);
    std::vector<char> Piece(64);
    for (size_t I = 0; I < Shard.parts().size(); ++I) {
      uint64_t Bytes = Shard.parts()[I].Bytes;
      uint64_t N = Bytes < Piece.size() ? Bytes : Piece.size();
      (void)Shard.readAt(I, (Bytes - N) / 2, N, Piece.data(), Error);
      // Past the end must be refused, not read.
      if (Shard.readAt(I, Bytes, 1, Piece.data(), Error))
        __builtin_trap();
    }
  }
  return 0;
}
