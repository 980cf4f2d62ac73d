//===- Nvme.cpp - Swap files for NVMe offload -----------------------------===//

#include "Nvme.h"
#include "dsc/PlanFacts.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace plan = dsc::plan;

namespace dsrun {

namespace {

uint64_t alignUp(uint64_t X, uint64_t A) { return (X + A - 1) / A * A; }

struct Piece {
  char *Memory;
  uint64_t Offset, Bytes;
  bool Direct;
};

} // namespace

SwapFile::~SwapFile() {
  if (Fd >= 0)
    close(Fd);
  if (DirectFd >= 0)
    close(DirectFd);
}

bool SwapFile::create(const std::string &FilePath, uint64_t Size,
                      unsigned ThreadCount, uint64_t Block,
                      std::string &Error) {
  Path = FilePath;
  Bytes = Size;
  Threads = std::max(1u, ThreadCount);
  BlockBytes = std::max<uint64_t>(Alignment, alignUp(Block, Alignment));
  Fd = open(Path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (Fd < 0) {
    Error = Path + ": cannot create the swap file: " + strerror(errno) +
            "; give --nvme-path a directory this process can write";
    Path.clear();
    return false;
  }
#ifdef O_DIRECT
  DirectFd = open(Path.c_str(), O_RDWR | O_DIRECT);
#endif
  // The file lives as long as its descriptors: nothing is left on the
  // drive when the run ends, however it ends.
  unlink(Path.c_str());
  // Take the space now, so that a full drive is an error here and not in
  // the middle of a step (ftruncate when the file system cannot).
  int Reserved = Size ? posix_fallocate(Fd, 0, off_t(Size)) : 0;
  if (Reserved != 0 && ftruncate(Fd, off_t(Size)) != 0) {
    Error = Path + ": cannot reserve " + std::to_string(Size) +
            " bytes for the swap file: " + strerror(Reserved) +
            "; free space on that drive or give --nvme-path another";
    return false;
  }
  if (Reserved == ENOSPC) {
    Error = Path + ": no space for the " + std::to_string(Size) +
            "-byte swap file; free space on that drive or give --nvme-path "
            "another";
    return false;
  }
  return true;
}

bool SwapFile::read(void *Dst, uint64_t Offset, uint64_t Size,
                    std::string &Error) {
  return transfer(static_cast<char *>(Dst), Offset, Size, false, Error);
}

bool SwapFile::write(const void *Src, uint64_t Offset, uint64_t Size,
                     std::string &Error) {
  return transfer(const_cast<char *>(static_cast<const char *>(Src)), Offset,
                  Size, true, Error);
}

bool SwapFile::transfer(char *Memory, uint64_t Offset, uint64_t Size,
                        bool Write, std::string &Error) {
  if (Offset + Size > Bytes || Offset + Size < Offset) {
    Error = Path + ": " + (Write ? "write" : "read") + " of " +
            std::to_string(Size) + " bytes at " + std::to_string(Offset) +
            " is past the swap file's " + std::to_string(Bytes) + " bytes";
    return false;
  }
  // Cut the request into blocks; the aligned ones go direct when memory
  // and file offset share their alignment.
  std::vector<Piece> Pieces;
  uint64_t Begin = Offset, End = Offset + Size;
  bool Alignable =
      direct() && (uintptr_t(Memory) - Offset) % Alignment == 0;
  uint64_t DirectBegin = Alignable ? std::min(End, alignUp(Begin, Alignment))
                                   : End;
  uint64_t DirectEnd =
      Alignable ? std::max(DirectBegin, End / Alignment * Alignment) : End;
  auto Add = [&](uint64_t From, uint64_t To, bool Direct) {
    for (uint64_t At = From; At < To; At += BlockBytes)
      Pieces.push_back({Memory + (At - Offset), At,
                        std::min(BlockBytes, To - At), Direct});
  };
  Add(Begin, DirectBegin, false);
  Add(DirectBegin, DirectEnd, true);
  Add(DirectEnd, End, false);

  std::atomic<size_t> Next{0};
  std::mutex Lock;
  std::string FirstError;
  auto Work = [&] {
    for (size_t I; (I = Next++) < Pieces.size();) {
      const Piece &W = Pieces[I];
      int F = W.Direct ? DirectFd : Fd;
      for (uint64_t Done = 0; Done < W.Bytes;) {
        ssize_t N = Write ? pwrite(F, W.Memory + Done, W.Bytes - Done,
                                   off_t(W.Offset + Done))
                          : pread(F, W.Memory + Done, W.Bytes - Done,
                                  off_t(W.Offset + Done));
        if (N < 0 && errno == EINTR)
          continue;
        if (N <= 0) {
          std::lock_guard<std::mutex> G(Lock);
          if (FirstError.empty())
            FirstError = Path + ": " + (Write ? "write" : "read") +
                         " failed at offset " +
                         std::to_string(W.Offset + Done) + ": " +
                         (N < 0 ? strerror(errno) : "unexpected end of file");
          Next = Pieces.size();
          return;
        }
        Done += uint64_t(N);
      }
      (W.Direct ? DirectBytes : BufferedBytes) += W.Bytes;
    }
  };
  unsigned Count = unsigned(std::min<size_t>(Threads, Pieces.size()));
  std::vector<std::thread> Pool;
  for (unsigned T = 1; T < Count; ++T)
    Pool.emplace_back(Work);
  Work();
  for (std::thread &T : Pool)
    T.join();
  if (!FirstError.empty()) {
    Error = FirstError;
    return false;
  }
  return true;
}

SwapLayout::SwapLayout(const plan::Plan &P) {
  for (const plan::SubGroup &G : P.Layout.SubGroups) {
    uint64_t Stride = alignUp(G.Elems * 4, SwapFile::Alignment);
    OptimizerBase.push_back(OptimizerFileBytes);
    RegionStride.push_back(Stride);
    OptimizerFileBytes += 3 * Stride;
  }
  unsigned PB = plan::dtypeBytes(P.Settings.ParamDType);
  ShardInUnit.assign(P.Tensors.size(), ~uint64_t(0));
  UnitOfTensor.assign(P.Tensors.size(), plan::NoIndex);
  for (uint32_t U = 0; U < P.FetchUnits.size(); ++U) {
    // Every shard on its own pages, as plan::swapUnitBytes counts them, so
    // that each read and write of one goes direct.
    uint64_t Within = 0;
    for (uint32_t T : P.FetchUnits[U].Tensors) {
      ShardInUnit[T] = Within;
      UnitOfTensor[T] = U;
      Within += alignUp(P.Tensors[T].ShardElems * PB, SwapFile::Alignment);
    }
    UnitBase.push_back(ParamFileBytes);
    UnitBytes.push_back(Within);
    LargestUnitBytes = std::max(LargestUnitBytes, Within);
    ParamFileBytes += Within;
  }
}

} // namespace dsrun
