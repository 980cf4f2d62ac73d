//===- checkpoint_bench.cpp - What checksums cost a checkpoint save -------===//
//
//   dsrun-checkpoint-bench DIR [GIB]
//
// Writes GIB GiB (default 2) into DIR through the same synced, renamed
// file and the same 64 MiB chunks, each copied into a staging buffer
// first, as bytes alone (AtomicFile) and as a
// checkpoint shard, whose every 1 MiB block is checksummed as it is
// written (writeShard), three times each, alternating; the best of each
// gives the rates and what the checksums cost. Then reads the shard back,
// checking every block. Host-only: the bytes come from memory, as a
// save's do once the device has copied them out. On /dev/shm the write
// costs least, so the checksums' share is largest there.
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace dsrun;

static double secondsSince(std::chrono::steady_clock::time_point T) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - T)
      .count();
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3 || !strcmp(argv[1], "--help")) {
    fprintf(stderr, "usage: dsrun-checkpoint-bench DIR [GIB]\n");
    return argc < 2 ? 1 : 0;
  }
  std::string Dir = argv[1];
  double GiB = argc == 3 ? atof(argv[2]) : 2.0;
  if (!(GiB > 0 && GiB <= 256)) {
    fprintf(stderr, "dsrun-checkpoint-bench: GIB must be in (0, 256]\n");
    return 1;
  }
  const uint64_t Chunk = 64ull << 20;
  uint64_t Bytes = uint64_t(GiB * (1ull << 30));
  std::vector<char> Buffer(Chunk);
  for (uint64_t I = 0; I < Chunk; ++I)
    Buffer[I] = char(I * 2654435761u >> 13);
  std::string Error;

  // Both paths copy each chunk into a staging buffer of their own first,
  // as a save copies it out of the device: the checksums are the only
  // difference.
  auto WritePlain = [&]() -> double {
    auto T = std::chrono::steady_clock::now();
    std::vector<char> Staging(Chunk);
    AtomicFile F;
    bool Ok = F.open(Dir + "/plain.bin", Error);
    for (uint64_t At = 0; Ok && At < Bytes; At += Chunk) {
      uint64_t N = std::min(Chunk, Bytes - At);
      memcpy(Staging.data(), Buffer.data(), N);
      Ok = F.write(Staging.data(), N, Error);
    }
    return Ok && F.commit(Error) ? secondsSince(T) : -1;
  };
  CheckpointHeader H;
  H.WorldSize = 1, H.Step = 1, H.OptimizerStep = 1, H.Scaler.Scale = 1;
  std::vector<CheckpointPart> Parts = {{"master_params", Bytes}};
  auto WriteShard = [&]() -> double {
    auto T = std::chrono::steady_clock::now();
    bool Ok = writeShard(Dir + "/rank0.ckpt", H, Parts,
                         [&](size_t, uint64_t, uint64_t N, char *Out) {
                           memcpy(Out, Buffer.data(), N);
                           return true;
                         },
                         Error);
    return Ok ? secondsSince(T) : -1;
  };
  double PlainS = 1e30, ShardS = 1e30;
  for (int Round = 0; Round < 3; ++Round) {
    double P = WritePlain(), S = WriteShard();
    if (P < 0 || S < 0) {
      fprintf(stderr, "dsrun-checkpoint-bench: %s\n", Error.c_str());
      return 1;
    }
    PlainS = std::min(PlainS, P), ShardS = std::min(ShardS, S);
  }

  auto Read = std::chrono::steady_clock::now();
  ShardReader R;
  if (!R.open(Dir + "/rank0.ckpt", Error) || !R.verify(Error)) {
    fprintf(stderr, "dsrun-checkpoint-bench: %s\n", Error.c_str());
    return 1;
  }
  double ReadS = secondsSince(Read);
  remove((Dir + "/plain.bin").c_str());
  remove((Dir + "/rank0.ckpt").c_str());

  double GB = double(Bytes) / 1e9;
  printf("{\"bytes\": %llu, \"plain_write_gb_s\": %.3f, "
         "\"checksummed_write_gb_s\": %.3f, \"checksum_cost_percent\": %.1f, "
         "\"verified_read_gb_s\": %.3f}\n",
         (unsigned long long)Bytes, GB / PlainS, GB / ShardS,
         100.0 * (ShardS - PlainS) / PlainS, GB / ReadS);
  return 0;
}
