//===- Checkpoint.cpp - Training checkpoints: format and files ------------===//
//
// A shard is little-endian, in the order written:
//   "DSRUNCK1", u32 version, the header's fields, u32 part count,
//   per part: u32 name length, name, u64 bytes;
//   the parts' bytes, one after another;
//   the CRC-32C of every 1 MiB block of every part (the last block of a
//   part may be shorter), u32 each, part after part;
//   "DSRUNEND" (a shard cut short has no trailer).
//
//===----------------------------------------------------------------------===//

#include "Checkpoint.h"
#include "Crc32c.h"

#include "dsc/PlanCodec.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <thread>
#include <unistd.h>

namespace plan = dsc::plan;

namespace dsrun {

namespace {

constexpr char Magic[8] = {'D', 'S', 'R', 'U', 'N', 'C', 'K', '1'};
constexpr char Trailer[8] = {'D', 'S', 'R', 'U', 'N', 'E', 'N', 'D'};
constexpr uint32_t Version = 2;
/// Parts move through a bounded buffer, never whole.
uint64_t Chunk = 64ull << 20;
/// Each part's bytes are checksummed in blocks of this size, so that a
/// damaged byte is placed within a MiB.
constexpr uint64_t BlockBytes = 1ull << 20;

uint64_t blocksOf(uint64_t Bytes) { return (Bytes + BlockBytes - 1) / BlockBytes; }

/// The block checksums of one part, made as its bytes stream past in
/// order, chunk by chunk: whole blocks of a chunk on several threads (a
/// save is no slower than its writes), a block split between chunks
/// carried over.
class BlockSums {
public:
  explicit BlockSums(uint64_t PartBytes) : Sums(blocksOf(PartBytes), 0) {}

  void add(uint64_t At, const char *Data, uint64_t N) {
    uint64_t End = At + N;
    // The rest of a block the previous chunk began.
    if (At % BlockBytes) {
      uint64_t Take = std::min(End, (At / BlockBytes + 1) * BlockBytes) - At;
      Sums[At / BlockBytes] = crc32c(Sums[At / BlockBytes], Data, Take);
      At += Take, Data += Take;
    }
    uint64_t Whole = (End - At) / BlockBytes, First = At / BlockBytes;
    unsigned Threads = unsigned(std::min<uint64_t>(
        Whole / 4,
        std::min(8u, std::max(1u, std::thread::hardware_concurrency()))));
    auto Range = [&](uint64_t Begin, uint64_t Stop) {
      for (uint64_t B = Begin; B < Stop; ++B)
        Sums[First + B] = crc32c(0, Data + B * BlockBytes, BlockBytes);
    };
    if (Threads > 1) {
      std::vector<std::thread> Pool;
      for (unsigned T = 0; T < Threads; ++T)
        Pool.emplace_back(Range, Whole * T / Threads, Whole * (T + 1) / Threads);
      for (std::thread &T : Pool)
        T.join();
    } else {
      Range(0, Whole);
    }
    At += Whole * BlockBytes, Data += Whole * BlockBytes;
    // The start of a block the next chunk ends.
    if (At < End)
      Sums[At / BlockBytes] = crc32c(0, Data, End - At);
  }

  const std::vector<uint32_t> &sums() const { return Sums; }

private:
  std::vector<uint32_t> Sums;
};

/// The header and part table as bytes (and back).
struct Encoder {
  std::string Out;
  template <class T> void put(const T &V) {
    Out.append(reinterpret_cast<const char *>(&V), sizeof(V));
  }
  void put(const std::string &S) {
    put(uint32_t(S.size()));
    Out += S;
  }
};

struct Decoder {
  FILE *F;
  bool Ok = true;
  template <class T> void get(T &V) {
    Ok = Ok && fread(&V, sizeof(V), 1, F) == 1;
  }
  void get(std::string &S) {
    uint32_t N = 0;
    get(N);
    if (!Ok || N > 4096) {
      Ok = false;
      return;
    }
    S.resize(N);
    Ok = Ok && (!N || fread(S.data(), N, 1, F) == 1);
  }
};

template <class Coder, class H> void headerFields(Coder &C, H &X) {
  C.put(X.ModelHash), C.put(X.ConfigHash), C.put(X.WorldSize), C.put(X.Rank);
  C.put(X.ZeroStage), C.put(X.ParamType), C.put(X.Step), C.put(X.OptimizerStep);
  C.put(X.Seed), C.put(X.Scaler.Scale), C.put(X.Scaler.Iteration);
  C.put(X.Scaler.LastOverflow), C.put(X.Scaler.Hysteresis);
}

/// Decoder with put() spelled get(), so headerFields serves both ways.
struct Reading {
  Decoder &D;
  template <class T> void put(T &V) { D.get(V); }
};

std::string directoryOf(const std::string &Path) {
  size_t Slash = Path.rfind('/');
  return Slash == std::string::npos ? "." : Slash ? Path.substr(0, Slash) : "/";
}

/// Calls Move(part, offset, bytes, buffer) for each part's bytes in order,
/// a chunk at a time through one buffer; false as soon as a call fails.
template <class F>
bool eachChunk(const std::vector<CheckpointPart> &Parts, F Move) {
  std::vector<char> Buffer;
  for (size_t I = 0; I < Parts.size(); ++I)
    for (uint64_t At = 0; At < Parts[I].Bytes; At += Chunk) {
      uint64_t N = std::min(Chunk, Parts[I].Bytes - At);
      Buffer.resize(N);
      if (!Move(I, At, N, Buffer.data()))
        return false;
    }
  return true;
}

bool isFile(const std::string &Path) {
  struct stat S;
  return stat(Path.c_str(), &S) == 0 && S_ISREG(S.st_mode);
}

} // namespace

void setCheckpointChunkBytes(uint64_t Bytes) { Chunk = Bytes ? Bytes : 1; }

AtomicFile::~AtomicFile() {
  if (Fd >= 0) {
    close(Fd);
    unlink(Temporary.c_str());
  }
}

static std::string bytesText(uint64_t Bytes) {
  char Text[64];
  bool Large = Bytes >= (1ull << 30);
  snprintf(Text, sizeof(Text), "%llu bytes (%.2f %s)",
           (unsigned long long)Bytes,
           Bytes / double(Large ? 1ull << 30 : 1ull << 20),
           Large ? "GiB" : "MiB");
  return Text;
}

/// What a full file system says: how much the file needed, how much was
/// free.
static std::string noSpace(const std::string &Path, uint64_t Needed,
                           int Errno) {
  std::string Text = Path + ": needs " + bytesText(Needed);
  struct statvfs Fs;
  if (statvfs(directoryOf(Path).c_str(), &Fs) == 0)
    Text += " and the file system has " +
            bytesText(uint64_t(Fs.f_bavail) * Fs.f_frsize) + " free";
  return Text + " (" + strerror(Errno) + ")";
}

bool AtomicFile::open(const std::string &To, std::string &Error,
                      uint64_t Bytes) {
  Path = To;
  Expected = Bytes;
  Temporary = Path + ".tmp." + std::to_string(getpid());
  Fd = ::open(Temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (Fd < 0) {
    Error = Temporary + ": cannot create: " + strerror(errno);
    return false;
  }
  // The whole file's blocks first, so that a full disk says so before a
  // byte is written (file systems without fallocate find out as they go).
  if (Bytes && fallocate(Fd, 0, 0, off_t(Bytes)) != 0 &&
      (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)) {
    Error = noSpace(Path, Bytes, errno);
    close(Fd);
    Fd = -1;
    unlink(Temporary.c_str());
    return false;
  }
  return true;
}

bool AtomicFile::write(const void *Data, uint64_t Bytes, std::string &Error) {
  const char *From = static_cast<const char *>(Data);
  while (Bytes) {
    ssize_t N = ::write(Fd, From, Bytes);
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0) {
      int E = N < 0 ? errno : ENOSPC;
      Error = E == ENOSPC || E == EDQUOT
                  ? noSpace(Path, std::max(Expected, Written + Bytes), E)
                  : Temporary + ": write failed after " +
                        bytesText(Written) + ": " + strerror(E);
      return false;
    }
    From += N;
    Bytes -= uint64_t(N);
    Written += uint64_t(N);
  }
  return true;
}

bool AtomicFile::commit(std::string &Error) {
  int F = Fd;
  Fd = -1;
  if (fsync(F) != 0 || close(F) != 0) {
    Error = Temporary + ": could not be synced: " + strerror(errno);
    unlink(Temporary.c_str());
    return false;
  }
  if (rename(Temporary.c_str(), Path.c_str()) != 0) {
    Error = Path + ": cannot rename the finished file into place: " +
            strerror(errno);
    unlink(Temporary.c_str());
    return false;
  }
  // The rename is durable once the directory is.
  int Dir = ::open(directoryOf(Path).c_str(), O_RDONLY | O_DIRECTORY);
  if (Dir >= 0) {
    fsync(Dir);
    close(Dir);
  }
  return true;
}

bool writeFileAtomically(const std::string &Path, const std::string &Bytes,
                         std::string &Error) {
  AtomicFile F;
  return F.open(Path, Error, Bytes.size()) &&
         F.write(Bytes.data(), Bytes.size(), Error) &&
         F.commit(Error);
}

bool copyIfPresent(const std::string &From, const std::string &To,
                   uint64_t &Bytes, std::string &Error) {
  FILE *In = fopen(From.c_str(), "rb");
  if (!In)
    return true;
  AtomicFile Out;
  std::vector<char> Buffer(8 << 20);
  bool Ok = Out.open(To, Error);
  while (Ok) {
    size_t N = fread(Buffer.data(), 1, Buffer.size(), In);
    if (N == 0) {
      if (ferror(In)) {
        Error = From + ": read failed";
        Ok = false;
      }
      break;
    }
    Ok = Out.write(Buffer.data(), N, Error);
    Bytes += N;
  }
  fclose(In);
  return Ok && Out.commit(Error);
}

std::string checkpointPlanPath(const std::string &Dir) {
  return Dir + "/plan.bin";
}

bool writeCheckpointPlan(const std::string &Dir, const plan::Plan &P,
                         std::string &Error) {
  std::vector<uint8_t> Bytes = plan::writePlan(P);
  return writeFileAtomically(checkpointPlanPath(Dir),
                             std::string(Bytes.begin(), Bytes.end()), Error);
}

const std::vector<plan::BufferRole> &stateRoles() {
  static const std::vector<plan::BufferRole> Roles = {
      plan::BufferRole::Params16, plan::BufferRole::PersistentParams,
      plan::BufferRole::MasterParams, plan::BufferRole::OptimizerStates};
  return Roles;
}

bool writeShard(
    const std::string &Path, const CheckpointHeader &H,
    const std::vector<CheckpointPart> &Parts,
    const std::function<bool(size_t, uint64_t, uint64_t, char *)> &Fill,
    std::string &Error) {
  Encoder E;
  E.Out.append(Magic, sizeof(Magic));
  E.put(Version);
  headerFields(E, H);
  E.put(uint32_t(Parts.size()));
  for (const CheckpointPart &Part : Parts) {
    E.put(Part.Name);
    E.put(Part.Bytes);
  }
  uint64_t FileBytes = E.Out.size() + sizeof(Trailer);
  for (const CheckpointPart &Part : Parts)
    FileBytes += Part.Bytes + 4 * blocksOf(Part.Bytes);
  AtomicFile F;
  if (!F.open(Path, Error, FileBytes) ||
      !F.write(E.Out.data(), E.Out.size(), Error))
    return false;
  std::vector<BlockSums> Sums;
  for (const CheckpointPart &Part : Parts)
    Sums.emplace_back(Part.Bytes);
  bool Written = eachChunk(Parts, [&](size_t I, uint64_t At, uint64_t N,
                                      char *Buffer) {
    if (!Fill(I, At, N, Buffer)) {
      Error = Path + ": could not read " + Parts[I].Name + " to save it" +
              (Error.empty() ? "" : " (" + Error + ")");
      return false;
    }
    // The checksums read the chunk while the write copies it out.
    std::thread Summing([&] { Sums[I].add(At, Buffer, N); });
    bool Ok = F.write(Buffer, N, Error);
    Summing.join();
    return Ok;
  });
  for (const BlockSums &S : Sums)
    Written = Written && F.write(S.sums().data(),
                                 S.sums().size() * sizeof(uint32_t), Error);
  return Written && F.write(Trailer, sizeof(Trailer), Error) &&
         F.commit(Error);
}

ShardReader::~ShardReader() {
  if (File)
    fclose(File);
}

bool ShardReader::open(const std::string &From, std::string &Error) {
  Path = From;
  File = fopen(Path.c_str(), "rb");
  if (!File) {
    Error = Path + ": cannot open: " + strerror(errno);
    return false;
  }
  Decoder D{File};
  char M[8] = {};
  uint32_t V = 0, Count = 0;
  D.Ok = fread(M, sizeof(M), 1, File) == 1 && !memcmp(M, Magic, sizeof(M));
  D.get(V);
  if (D.Ok && V == 1) {
    Error = Path + ": a shard of an older dsrun, written without checksums "
                   "(version 1); this dsrun reads version " +
            std::to_string(Version) + " only";
    return false;
  }
  if (!D.Ok || V != Version) {
    Error = Path + ": not a dsrun checkpoint shard of version " +
            std::to_string(Version);
    return false;
  }
  struct stat S;
  if (fstat(fileno(File), &S) != 0) {
    Error = Path + ": cannot stat: " + strerror(errno);
    return false;
  }
  Reading R{D};
  headerFields(R, H);
  D.get(Count);
  if (D.Ok && Count > 64)
    D.Ok = false;
  // No part, nor all of them, can be larger than the file: a damaged size
  // is caught here rather than by a sum that wraps around.
  uint64_t Total = 0, FileBytes = uint64_t(S.st_size);
  for (uint32_t I = 0; D.Ok && I < Count; ++I) {
    CheckpointPart Part;
    D.get(Part.Name);
    D.get(Part.Bytes);
    if (Part.Bytes > FileBytes - std::min(Total, FileBytes))
      D.Ok = false;
    Total += Part.Bytes;
    Parts.push_back(Part);
  }
  // Values a run could not have written (a damaged or forged header).
  if (D.Ok && (H.OptimizerStep < 1 || H.OptimizerStep > H.Step + 1 ||
               !(H.Scaler.Scale > 0) || !std::isfinite(H.Scaler.Scale)))
    D.Ok = false;
  long Here = ftell(File);
  if (!D.Ok || Here < 0) {
    Error = Path + ": the shard's header is cut short or damaged";
    return false;
  }
  DataBegin = uint64_t(Here);
  uint64_t Blocks = 0;
  for (const CheckpointPart &Part : Parts)
    Blocks += blocksOf(Part.Bytes);
  uint64_t Promised = DataBegin + Total + Blocks * 4 + sizeof(Trailer);
  char T[8] = {};
  Sums.assign(Blocks, 0);
  if (uint64_t(S.st_size) != Promised ||
      fseeko(File, off_t(DataBegin + Total), SEEK_SET) != 0 ||
      (Blocks && fread(Sums.data(), Blocks * 4, 1, File) != 1) ||
      fread(T, sizeof(T), 1, File) != 1 || memcmp(T, Trailer, sizeof(T))) {
    Error = Path + ": the shard is " + std::to_string(S.st_size) +
            " bytes where its header promises " + std::to_string(Promised) +
            " (cut short, or not written by dsrun)";
    return false;
  }
  return true;
}

bool ShardReader::readAt(size_t Part, uint64_t Offset, uint64_t Bytes,
                         char *Out, std::string &Error) {
  if (Part >= Parts.size() || Offset + Bytes > Parts[Part].Bytes) {
    Error = Path + ": no bytes " + std::to_string(Offset) + "+" +
            std::to_string(Bytes) + " in part " + std::to_string(Part);
    return false;
  }
  uint64_t At = DataBegin + Offset;
  for (size_t I = 0; I < Part; ++I)
    At += Parts[I].Bytes;
  if (fseeko(File, off_t(At), SEEK_SET) != 0 ||
      (Bytes && fread(Out, Bytes, 1, File) != 1)) {
    Error = Path + ": read failed in " + Parts[Part].Name;
    return false;
  }
  return true;
}

bool ShardReader::read(
    const std::function<bool(size_t, uint64_t, uint64_t, const char *)> &Take,
    std::string &Error) {
  if (fseek(File, long(DataBegin), SEEK_SET) != 0) {
    Error = Path + ": cannot seek";
    return false;
  }
  std::vector<BlockSums> Got;
  for (const CheckpointPart &Part : Parts)
    Got.emplace_back(Part.Bytes);
  return eachChunk(Parts, [&](size_t I, uint64_t At, uint64_t N,
                              char *Buffer) {
    if (fread(Buffer, N, 1, File) != 1) {
      Error = Path + ": read failed in " + Parts[I].Name;
      return false;
    }
    // The blocks this chunk completes are checked before it is handed on.
    Got[I].add(At, Buffer, N);
    uint64_t Done = At + N == Parts[I].Bytes ? blocksOf(At + N)
                                             : (At + N) / BlockBytes;
    for (uint64_t B = At / BlockBytes; B < Done; ++B)
      if (Got[I].sums()[B] != Sums[firstBlock(I) + B]) {
        Error = damaged(I, B);
        return false;
      }
    if (!Take(I, At, N, Buffer)) {
      Error = Path + ": could not restore " + Parts[I].Name +
              (Error.empty() ? "" : " (" + Error + ")");
      return false;
    }
    return true;
  });
}

uint64_t ShardReader::firstBlock(size_t Part) const {
  uint64_t First = 0;
  for (size_t I = 0; I < Part; ++I)
    First += blocksOf(Parts[I].Bytes);
  return First;
}

std::string ShardReader::damaged(size_t Part, uint64_t Block) const {
  uint64_t Begin = Block * BlockBytes,
           End = std::min(Parts[Part].Bytes, Begin + BlockBytes);
  uint64_t At = DataBegin;
  for (size_t I = 0; I < Part; ++I)
    At += Parts[I].Bytes;
  return Path + ": rank " + std::to_string(H.Rank) + "'s " + Parts[Part].Name +
         ", bytes " + std::to_string(Begin) + " to " + std::to_string(End) +
         " (file offset " + std::to_string(At + Begin) +
         "), do not match their checksum: the shard is damaged";
}

bool ShardReader::verify(std::string &Error) {
  return read([](size_t, uint64_t, uint64_t, const char *) { return true; },
              Error);
}

bool makeDirectories(const std::string &Path, std::string &Error) {
  for (size_t At = 1; At <= Path.size(); ++At) {
    if (At < Path.size() && Path[At] != '/')
      continue;
    std::string Prefix = Path.substr(0, At);
    if (mkdir(Prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      Error = Prefix + ": cannot create the directory: " + strerror(errno);
      return false;
    }
  }
  struct stat S;
  if (stat(Path.c_str(), &S) != 0 || !S_ISDIR(S.st_mode)) {
    Error = Path + ": not a directory";
    return false;
  }
  return true;
}

std::string discardCheckpoint(const std::string &SaveDir, uint32_t Step) {
  std::string Name = checkpointName(Step), Dir = SaveDir + "/" + Name;
  std::ifstream Latest(SaveDir + "/latest");
  std::string Named;
  std::getline(Latest, Named);
  if (Named == Name)
    return "";
  std::error_code Failed;
  uintmax_t Removed = std::filesystem::remove_all(Dir, Failed);
  if (Failed)
    return Dir + " (partly written) could not be removed: " +
           Failed.message();
  return Removed ? Dir + " (partly written) is removed" : "";
}

std::string checkpointName(uint32_t Step) {
  return "global_step" + std::to_string(Step);
}

std::string checkpointToResume(const std::string &Dir, std::string &Error) {
  if (isFile(Dir + "/rank0.ckpt"))
    return Dir;
  FILE *F = fopen((Dir + "/latest").c_str(), "r");
  if (!F) {
    Error = Dir + ": neither a checkpoint (no rank0.ckpt) nor a --save "
                  "directory (no file 'latest')";
    return "";
  }
  char Line[256] = {};
  bool Read = fgets(Line, sizeof(Line), F) != nullptr;
  fclose(F);
  std::string Name = Read ? Line : "";
  while (!Name.empty() && (Name.back() == '\n' || Name.back() == ' '))
    Name.pop_back();
  if (Name.empty() || Name.find('/') != std::string::npos ||
      !isFile(Dir + "/" + Name + "/rank0.ckpt")) {
    Error = Dir + "/latest names '" + Name + "', which holds no checkpoint";
    return "";
  }
  return Dir + "/" + Name;
}

std::string checkShardAgainstPlan(const CheckpointHeader &H,
                                  const std::vector<CheckpointPart> &Have,
                                  const plan::Plan &P, uint32_t Rank,
                                  const std::vector<CheckpointPart> &Parts) {
  const plan::Info &S = P.Settings;
  auto Differs = [](const std::string &What, uint64_t Saved, uint64_t Now) {
    return "it was written with " + What + " " + std::to_string(Saved) +
           " and this plan has " + std::to_string(Now);
  };
  std::string Why;
  if (H.ModelHash != S.ModelHash)
    Why = "it was written for another model (the ONNX file's hash differs)";
  else if (H.WorldSize != S.WorldSize)
    Why = Differs("world size", H.WorldSize, S.WorldSize);
  else if (H.ZeroStage != S.ZeroStage)
    Why = Differs("ZeRO stage", H.ZeroStage, S.ZeroStage);
  else if (H.ParamType != uint32_t(S.ParamDType))
    Why = "it was written with " +
          std::string(plan::enumName(plan::DType(H.ParamType))) +
          " parameters and this plan has " +
          std::string(plan::enumName(S.ParamDType));
  else if (H.Rank != Rank)
    Why = Differs("rank", H.Rank, Rank);
  // A swap file's part is named with a fingerprint of its layout after '@'.
  auto Base = [](const std::string &Name) {
    return Name.substr(0, Name.find('@'));
  };
  for (size_t I = 0; Why.empty() && I < std::max(Have.size(), Parts.size());
       ++I) {
    if (I < Have.size() && I < Parts.size() &&
        Have[I].Name != Parts[I].Name &&
        Base(Have[I].Name) == Base(Parts[I].Name))
      Why = "its " + Base(Parts[I].Name) + " is laid out for other "
            "sub-groups or fetch units than this plan's";
    else if (I >= Have.size() || I >= Parts.size() ||
        Have[I].Name != Parts[I].Name)
      Why = "its buffers are not this plan's (" +
            (I < Have.size() ? Have[I].Name : std::string("none")) + " where "
            "the plan has " +
            (I < Parts.size() ? Parts[I].Name : std::string("none")) + ")";
    else if (Have[I].Bytes != Parts[I].Bytes)
      Why = Differs(Parts[I].Name + " of bytes", Have[I].Bytes,
                    Parts[I].Bytes);
  }
  if (Why.empty())
    return "";
  // Only the layout differs: the state itself can be moved.
  bool SameModel = H.ModelHash == S.ModelHash &&
                   H.ParamType == uint32_t(S.ParamDType) && H.Rank == Rank;
  return Why + "; resume with the plan that wrote it" +
         (SameModel ? ", or rewrite the checkpoint for this plan with "
                      "dsrun-reshard (docs/training.md)"
                    : "");
}

} // namespace dsrun
