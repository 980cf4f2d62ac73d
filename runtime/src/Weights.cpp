//===- Weights.cpp - Initial weights from safetensors, and saving ---------===//

#include "Weights.h"
#include "Checkpoint.h"
#include "Crc32c.h"

#include "dsc/SafeTensors.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace plan = dsc::plan;

namespace dsrun {

namespace {

std::string shapeText(const std::vector<int64_t> &S) {
  std::string T = "[";
  for (size_t I = 0; I < S.size(); ++I)
    T += (I ? ", " : "") + std::to_string(S[I]);
  return T + "]";
}

bool sameElements(const std::vector<int64_t> &A, const std::vector<int64_t> &B) {
  // Shapes must agree, but a [N] bias stored as [1, N] is the same tensor.
  auto Squeezed = [](const std::vector<int64_t> &S) {
    std::vector<int64_t> R;
    for (int64_t D : S)
      if (D != 1)
        R.push_back(D);
    return R;
  };
  return Squeezed(A) == Squeezed(B);
}

/// Threads a 16-bit tensor decodes on: a rank's share of a node's cores
/// is not known yet when the weights are read.
constexpr uint64_t MaxDecodeThreads = 8;

/// Converts one tensor's stored elements to fp32.
bool decode(const char *Data, const dsc::safetensors::TensorInfo &T,
            std::vector<float> &Out, std::string &Error) {
  uint64_t N = (T.End - T.Begin) / dsc::safetensors::dtypeBytes(T.DType);
  Out.resize(N);
  const char *B = Data + T.Begin;
  if (T.DType == "F32") {
    memcpy(Out.data(), B, N * 4);
  } else if (T.DType == "BF16" || T.DType == "F16") {
    // A file's tensors need not be aligned (the header's length is the
    // writer's): each element is copied out before it is read.
    ElementType E = T.DType == "BF16" ? ElementType::BF16 : ElementType::F16;
    // Every rank decodes the whole model as it starts (8 G elements at
    // 8B): on threads of its own for a large tensor, which end with it
    // (the host-work pool is sized later, for the rank's share of cores).
    auto Decode = [&](uint64_t Begin, uint64_t End) {
      for (uint64_t I = Begin; I < End; ++I) {
        uint16_t Bits;
        memcpy(&Bits, B + 2 * I, 2);
        Out[I] = loadAs(&Bits, 0, E);
      }
    };
    constexpr uint64_t PerThread = 1 << 20;
    unsigned Threads = unsigned(std::min<uint64_t>(
        {MaxDecodeThreads, N / PerThread + 1,
         std::max(1u, std::thread::hardware_concurrency())}));
    std::vector<std::thread> Workers;
    for (unsigned T = 1; T < Threads; ++T)
      Workers.emplace_back(Decode, N * T / Threads, N * (T + 1) / Threads);
    Decode(0, N / Threads);
    for (std::thread &W : Workers)
      W.join();
  } else if (T.DType == "F64") {
    for (uint64_t I = 0; I < N; ++I) {
      double D;
      memcpy(&D, B + 8 * I, 8);
      Out[I] = float(D);
    }
  } else {
    Error = "tensor '" + T.Name + "' is " + T.DType +
            "; a parameter must be F32, F16, BF16 or F64";
    return false;
  }
  return true;
}

/// The metadata key of a tensor's checksum in the files dsrun writes.
std::string checksumKey(const std::string &Tensor) {
  return "dsrun.crc32c." + Tensor;
}

/// A tensor whose file carries its checksum (dsrun wrote it) must match
/// it; other files (Hugging Face's) have none to check.
bool matchesChecksum(const dsc::safetensors::Header &H,
                     const dsc::safetensors::TensorInfo &T,
                     const char *Payload, std::string &Error) {
  auto Sum = H.Metadata.find(checksumKey(T.Name));
  if (Sum == H.Metadata.end())
    return true;
  if (crc32cText(crc32c(0, Payload + T.Begin, T.End - T.Begin)) == Sum->second)
    return true;
  Error = "tensor '" + T.Name + "', bytes " + std::to_string(T.Begin) +
          " to " + std::to_string(T.End) + " of the data (file offset " +
          std::to_string(H.DataStart + T.Begin) +
          "), does not match its checksum: the file is damaged";
  return false;
}

/// A file mapped whole, read-only, for as long as this lives.
struct MappedFile {
  const char *Data = nullptr;
  uint64_t Size = 0;

  bool open(const std::string &Path, std::string &Error) {
    int Fd = ::open(Path.c_str(), O_RDONLY);
    if (Fd < 0) {
      Error = Path + ": cannot open: " + strerror(errno);
      return false;
    }
    struct stat St;
    if (fstat(Fd, &St) != 0 || St.st_size < 8) {
      Error = Path + ": not a safetensors file (too short)";
      close(Fd);
      return false;
    }
    Size = uint64_t(St.st_size);
    void *Map = mmap(nullptr, Size, PROT_READ, MAP_PRIVATE, Fd, 0);
    close(Fd);
    if (Map == MAP_FAILED) {
      Error = Path + ": cannot map: " + strerror(errno);
      return false;
    }
    Data = static_cast<const char *>(Map);
    return true;
  }
  ~MappedFile() {
    if (Data)
      munmap(const_cast<char *>(Data), Size);
  }
};

bool readHeader(const std::string &Path, const MappedFile &File,
                dsc::safetensors::Header &H, std::string &Error) {
  std::string E;
  if (dsc::safetensors::readHeader(File.Data, File.Size, File.Size, H, E))
    return true;
  Error = Path + ": " + E;
  return false;
}

bool isDirectory(const std::string &Path) {
  struct stat St;
  return stat(Path.c_str(), &St) == 0 && S_ISDIR(St.st_mode);
}

bool exists(const std::string &Path) {
  struct stat St;
  return stat(Path.c_str(), &St) == 0;
}

bool endsWith(const std::string &S, const std::string &Tail) {
  return S.size() >= Tail.size() &&
         S.compare(S.size() - Tail.size(), Tail.size(), Tail) == 0;
}

std::string folderOf(const std::string &File) {
  size_t Slash = File.find_last_of('/');
  return Slash == std::string::npos ? "." : File.substr(0, Slash);
}

/// The safetensors files of a model and the tensors they hold: one file,
/// or the shards its model.safetensors.index.json names (as
/// from_pretrained reads them).
struct WeightFiles {
  struct File {
    std::string Path;
    MappedFile Map;
    dsc::safetensors::Header H;
  };
  struct Entry {
    const File *In;
    const dsc::safetensors::TensorInfo *Info;
  };
  std::string Folder;
  std::vector<std::unique_ptr<File>> Files;
  std::vector<Entry> Tensors;

  bool addFile(const std::string &Path, std::string &Error) {
    auto F = std::make_unique<File>();
    F->Path = Path;
    if (!F->Map.open(Path, Error) || !readHeader(Path, F->Map, F->H, Error))
      return false;
    Files.push_back(std::move(F));
    return true;
  }

  bool open(const std::string &Path, std::string &Error) {
    std::string File = Path;
    if (isDirectory(Path)) {
      // from_pretrained's order: the single file, then the index.
      Folder = Path;
      File = Path + "/model.safetensors";
      if (!exists(File))
        File = Path + "/" + ModelIndexName;
      if (!exists(File)) {
        Error = Path + ": a folder with neither model.safetensors nor " +
                ModelIndexName;
        return false;
      }
    } else {
      Folder = folderOf(Path);
    }
    if (endsWith(File, ".index.json"))
      return openIndex(File, Error);
    if (!addFile(File, Error))
      return false;
    for (const dsc::safetensors::TensorInfo &T : Files[0]->H.Tensors)
      Tensors.push_back({Files[0].get(), &T});
    return true;
  }

  bool openIndex(const std::string &Path, std::string &Error) {
    MappedFile Text;
    if (!Text.open(Path, Error))
      return false;
    dsc::safetensors::Index I;
    std::string E;
    if (Text.Size > (64u << 20) ||
        !dsc::safetensors::readIndex(Text.Data, Text.Size, I, E)) {
      Error = Path + ": " + (E.empty() ? "larger than any index" : E);
      return false;
    }
    std::map<std::string, const File *> Opened;
    for (const auto &[Tensor, Name] : I.WeightMap) {
      if (!Opened.count(Name)) {
        if (!addFile(Folder + "/" + Name, Error))
          return false;
        Opened[Name] = Files.back().get();
      }
      const File *F = Opened[Name];
      const dsc::safetensors::TensorInfo *Info = F->H.find(Tensor);
      if (!Info) {
        Error = Path + ": puts '" + Tensor + "' in " + Name +
                ", which does not hold it";
        return false;
      }
      Tensors.push_back({F, Info});
    }
    return true;
  }

  const char *payload(const Entry &E) const {
    return E.In->Map.Data + E.In->H.DataStart;
  }
};

} // namespace

bool checkWeightsFile(const std::string &Path, std::string &Error) {
  WeightFiles W;
  if (!W.open(Path, Error))
    return false;
  for (const WeightFiles::Entry &T : W.Tensors) {
    std::string E;
    if (!T.In->H.Metadata.count(checksumKey(T.Info->Name))) {
      Error = T.In->Path + ": tensor '" + T.Info->Name +
              "' has no checksum (a file dsrun did not write, or an older "
              "dsrun's)";
      return false;
    }
    if (!matchesChecksum(T.In->H, *T.Info, W.payload(T), E)) {
      Error = T.In->Path + ": " + E;
      return false;
    }
  }
  return true;
}

std::optional<InitialWeights> loadWeights(const plan::Plan &P,
                                          const std::string &Path,
                                          std::string &Error) {
  WeightFiles Files;
  if (!Files.open(Path, Error))
    return std::nullopt;
  std::string E;
  size_t NT = P.Tensors.size();
  InitialWeights W;
  W.Folder = Files.Folder;
  W.Values.resize(NT);
  W.FileName.resize(NT);
  const std::vector<WeightFiles::Entry> &All = Files.Tensors;
  std::vector<bool> Claimed(All.size(), false);
  std::vector<uint32_t> Missing;
  auto Take = [&](uint32_t T, size_t F) -> bool {
    const dsc::safetensors::TensorInfo &Info = *All[F].Info;
    const std::string &In = All[F].In->Path;
    if (!sameElements(Info.Shape, P.Tensors[T].Shape)) {
      Error = In + ": tensor '" + Info.Name + "' has shape " +
              shapeText(Info.Shape) + " but the plan's '" +
              P.Tensors[T].Name + "' is " + shapeText(P.Tensors[T].Shape);
      return false;
    }
    if (!matchesChecksum(All[F].In->H, Info, Files.payload(All[F]), E) ||
        !decode(Files.payload(All[F]), Info, W.Values[T], E)) {
      Error = In + ": " + E;
      return false;
    }
    Claimed[F] = true;
    W.FileName[T] = Info.Name;
    return true;
  };
  for (uint32_t T = 0; T < NT; ++T) {
    size_t F = 0;
    while (F < All.size() && All[F].Info->Name != P.Tensors[T].Name)
      ++F;
    if (F == All.size()) {
      Missing.push_back(T);
      continue;
    }
    if (!Take(T, F))
      return std::nullopt;
  }
  for (uint32_t T : Missing) {
    // A tied weight under another name: the one unclaimed tensor of its
    // shape.
    size_t Found = All.size(), Candidates = 0;
    for (size_t F = 0; F < All.size(); ++F)
      if (!Claimed[F] && sameElements(All[F].Info->Shape, P.Tensors[T].Shape)) {
        ++Candidates;
        Found = F;
      }
    if (Candidates != 1) {
      Error = Path + ": no tensor named '" + P.Tensors[T].Name + "' (shape " +
              shapeText(P.Tensors[T].Shape) + ")" +
              (Candidates ? ", and " + std::to_string(Candidates) +
                                " unclaimed tensors of that shape to choose from"
                          : "") +
              "; is this the model the plan was made from?";
      return std::nullopt;
    }
    if (!Take(T, Found))
      return std::nullopt;
  }
  return W;
}

namespace {

/// A safetensors file of the plan's tensors Which, written atomically.
bool writeTensors(const plan::Plan &P, const std::vector<std::string> &Names,
                  const std::vector<std::vector<char>> &Data, ElementType Type,
                  const std::vector<uint32_t> &Which, const std::string &Path,
                  std::string &Error) {
  const char *DType = Type == ElementType::F32    ? "F32"
                      : Type == ElementType::BF16 ? "BF16"
                                                  : "F16";
  dsc::safetensors::Writer Out;
  Out.metadata("format", "pt");
  Out.metadata("producer", "dsrun");
  for (uint32_t T : Which) {
    const std::string &Name = Names[T].empty() ? P.Tensors[T].Name : Names[T];
    Out.metadata(checksumKey(Name),
                 crc32cText(crc32c(0, Data[T].data(), Data[T].size())));
    Out.add(Name, DType, P.Tensors[T].Shape, Data[T].data(), Data[T].size());
  }
  const std::vector<char> &Bytes = Out.bytes();
  AtomicFile File;
  return File.open(Path, Error, Bytes.size()) &&
         File.write(Bytes.data(), Bytes.size(), Error) &&
         File.commit(Error);
}

/// Whether Name is a weights file save_pretrained writes: the single file,
/// the index, or a shard "model-NNNNN-of-NNNNN.safetensors".
bool isModelWeightsFile(const std::string &Name) {
  if (Name == "model.safetensors" || Name == ModelIndexName)
    return true;
  const std::string Shape = "model-#####-of-#####.safetensors";
  if (Name.size() != Shape.size())
    return false;
  for (size_t K = 0; K < Shape.size(); ++K)
    if (Shape[K] == '#' ? !isdigit(static_cast<unsigned char>(Name[K]))
                        : Name[K] != Shape[K])
      return false;
  return true;
}

} // namespace

bool saveWeights(const plan::Plan &P, const std::vector<std::string> &Names,
                 const std::vector<std::vector<char>> &Data, ElementType Type,
                 const std::string &Path, std::string &Error) {
  std::vector<uint32_t> All(P.Tensors.size());
  for (uint32_t T = 0; T < All.size(); ++T)
    All[T] = T;
  return writeTensors(P, Names, Data, Type, All, Path, Error);
}

bool saveModelFolder(const plan::Plan &P, const std::vector<std::string> &Names,
                     const std::vector<std::vector<char>> &Data,
                     ElementType Type, const std::string &Dir,
                     uint64_t MaxShardBytes, const std::string &ConfigFolder,
                     std::string &Error) {
  if (!makeDirectories(Dir, Error))
    return false;
  // Shards as huggingface_hub's split_state_dict_into_shards cuts them for
  // save_pretrained: tensors in order, a new shard where the next tensor
  // would take the current one past the limit; a tensor larger than the
  // limit gets a shard of its own, placed when it comes, while the current
  // one goes on filling.
  std::vector<std::vector<uint32_t>> Shards;
  std::vector<uint32_t> Current;
  uint64_t Bytes = 0, Total = 0;
  for (uint32_t T = 0; T < P.Tensors.size(); ++T) {
    uint64_t Size = Data[T].size();
    Total += Size;
    if (Size > MaxShardBytes) {
      Shards.push_back({T});
      continue;
    }
    if (!Current.empty() && Bytes + Size > MaxShardBytes) {
      Shards.push_back(Current);
      Current.clear();
      Bytes = 0;
    }
    Current.push_back(T);
    Bytes += Size;
  }
  if (!Current.empty() || Shards.empty())
    Shards.push_back(Current);
  std::vector<std::string> Written;
  if (Shards.size() == 1) {
    Written.push_back("model.safetensors");
    if (!writeTensors(P, Names, Data, Type, Shards[0], Dir + "/" + Written[0],
                      Error))
      return false;
  } else {
    // Shards of an earlier save may have the same names: without its
    // index, a save cut short cannot be read as a mix of the two.
    unlink((Dir + "/" + ModelIndexName).c_str());
    dsc::safetensors::Index Index;
    Index.TotalSize = Total;
    for (size_t K = 0; K < Shards.size(); ++K) {
      char Name[64];
      snprintf(Name, sizeof(Name), "model-%05zu-of-%05zu.safetensors", K + 1,
               Shards.size());
      Written.push_back(Name);
      if (!writeTensors(P, Names, Data, Type, Shards[K], Dir + "/" + Name,
                        Error))
        return false;
      for (uint32_t T : Shards[K])
        Index.WeightMap[Names[T].empty() ? P.Tensors[T].Name : Names[T]] =
            Name;
    }
    // The index last: until it is there, no reader takes the shards.
    Written.push_back(ModelIndexName);
    if (!writeFileAtomically(Dir + "/" + ModelIndexName,
                             dsc::safetensors::indexJson(Index), Error))
      return false;
  }
  // What an earlier save left would shadow or confuse this one:
  // from_pretrained reads model.safetensors before any index.
  for (const std::string &Name : modelWeightsFiles(Dir))
    if (std::find(Written.begin(), Written.end(), Name) == Written.end())
      unlink((Dir + "/" + Name).c_str());
  // transformers loads the folder when it has the model's config.
  uint64_t Copied = 0;
  if (!ConfigFolder.empty() && ConfigFolder != Dir)
    for (const char *Name : ModelConfigFiles)
      if (!copyIfPresent(ConfigFolder + "/" + Name, Dir + "/" + Name, Copied,
                         Error))
        return false;
  return true;
}

bool saveWeightsAt(const plan::Plan &P, const std::vector<std::string> &Names,
                   const std::vector<std::vector<char>> &Data,
                   ElementType Type, const std::string &Path,
                   uint64_t MaxShardBytes, const std::string &ConfigFolder,
                   std::string &Error) {
  return endsWith(Path, ".safetensors")
             ? saveWeights(P, Names, Data, Type, Path, Error)
             : saveModelFolder(P, Names, Data, Type, Path, MaxShardBytes,
                               ConfigFolder, Error);
}

std::vector<std::string> modelWeightsFiles(const std::string &Dir) {
  std::vector<std::string> Names;
  if (DIR *D = opendir(Dir.c_str())) {
    while (dirent *E = readdir(D))
      if (isModelWeightsFile(E->d_name))
        Names.push_back(E->d_name);
    closedir(D);
  }
  std::sort(Names.begin(), Names.end());
  return Names;
}

std::optional<uint64_t> configVocabSize(const std::string &Folder,
                                        std::string &Error) {
  std::ifstream In(Folder + "/config.json", std::ios::binary);
  if (!In)
    return std::nullopt;
  std::string Text((std::istreambuf_iterator<char>(In)), {});
  dsc::safetensors::detail::Json J(Text.data(), Text.data() + Text.size());
  int64_t Vocab = -1;
  if (J.eat('{') && !J.eat('}'))
    do {
      std::string Key;
      if (!J.string(Key) || !J.eat(':'))
        break;
      if (Key == "vocab_size")
        J.integer(Vocab);
      else
        J.skip();
    } while (J.Error.empty() && J.eat(','));
  if (!J.Error.empty() || Vocab == 0) {
    Error = Folder + "/config.json: " +
            (J.Error.empty() ? "vocab_size is 0" : J.Error);
    return std::nullopt;
  }
  if (Vocab < 0)
    return std::nullopt;
  return uint64_t(Vocab);
}

std::optional<uint64_t> parseShardSize(const std::string &Text) {
  // transformers' convert_file_size_to_int: GB is 10^9, GiB 2^30, and a
  // decimal unit ending in a lower-case b counts bits ("5Gb").
  char *End = nullptr;
  double V = strtod(Text.c_str(), &End);
  if (End == Text.c_str() || !(V > 0))
    return std::nullopt;
  std::string Unit = End;
  bool Bits = Unit.size() == 2 && Unit[1] == 'b';
  for (char &C : Unit)
    C = char(toupper(static_cast<unsigned char>(C)));
  if (Bits && Unit != "KB" && Unit != "MB" && Unit != "GB")
    return std::nullopt;
  double Scale = Unit.empty() || Unit == "B" ? 1
                 : Unit == "KB"              ? 1e3
                 : Unit == "MB"              ? 1e6
                 : Unit == "GB"              ? 1e9
                 : Unit == "KIB"             ? 1024.0
                 : Unit == "MIB"             ? 1048576.0
                 : Unit == "GIB"             ? 1073741824.0
                                             : 0;
  if (Bits)
    Scale /= 8;
  if (!Scale || V * Scale < 1 || V * Scale > 1e15)
    return std::nullopt;
  return uint64_t(V * Scale);
}

} // namespace dsrun
