//===- Weights.cpp - Initial weights from safetensors, and saving ---------===//

#include "Weights.h"
#include "Checkpoint.h"
#include "Crc32c.h"

#include "dsc/SafeTensors.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
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
    for (uint64_t I = 0; I < N; ++I) {
      uint16_t Bits;
      memcpy(&Bits, B + 2 * I, 2);
      Out[I] = loadAs(&Bits, 0, E);
    }
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

} // namespace

bool checkWeightsFile(const std::string &Path, std::string &Error) {
  MappedFile File;
  dsc::safetensors::Header H;
  if (!File.open(Path, Error) || !readHeader(Path, File, H, Error))
    return false;
  for (const dsc::safetensors::TensorInfo &T : H.Tensors) {
    std::string E;
    if (!H.Metadata.count(checksumKey(T.Name))) {
      Error = Path + ": tensor '" + T.Name +
              "' has no checksum (a file dsrun did not write, or an older "
              "dsrun's)";
      return false;
    }
    if (!matchesChecksum(H, T, File.Data + H.DataStart, E)) {
      Error = Path + ": " + E;
      return false;
    }
  }
  return true;
}

std::optional<InitialWeights> loadWeights(const plan::Plan &P,
                                          const std::string &Path,
                                          std::string &Error) {
  MappedFile File;
  dsc::safetensors::Header H;
  if (!File.open(Path, Error) || !readHeader(Path, File, H, Error))
    return std::nullopt;
  std::string E;
  const char *Payload = File.Data + H.DataStart;
  size_t NT = P.Tensors.size();
  InitialWeights W;
  W.Values.resize(NT);
  W.FileName.resize(NT);
  std::vector<bool> Claimed(H.Tensors.size(), false);
  std::vector<uint32_t> Missing;
  auto Take = [&](uint32_t T, size_t F) -> bool {
    const dsc::safetensors::TensorInfo &Info = H.Tensors[F];
    if (!sameElements(Info.Shape, P.Tensors[T].Shape)) {
      Error = Path + ": tensor '" + Info.Name + "' has shape " +
              shapeText(Info.Shape) + " but the plan's '" +
              P.Tensors[T].Name + "' is " + shapeText(P.Tensors[T].Shape);
      return false;
    }
    if (!matchesChecksum(H, Info, Payload, E)) {
      Error = Path + ": " + E;
      return false;
    }
    if (!decode(Payload, Info, W.Values[T], E)) {
      Error = Path + ": " + E;
      return false;
    }
    Claimed[F] = true;
    W.FileName[T] = Info.Name;
    return true;
  };
  for (uint32_t T = 0; T < NT; ++T) {
    size_t F = 0;
    while (F < H.Tensors.size() && H.Tensors[F].Name != P.Tensors[T].Name)
      ++F;
    if (F == H.Tensors.size()) {
      Missing.push_back(T);
      continue;
    }
    if (!Take(T, F))
      return std::nullopt;
  }
  for (uint32_t T : Missing) {
    // A tied weight under another name: the one unclaimed tensor of its
    // shape.
    size_t Found = H.Tensors.size(), Candidates = 0;
    for (size_t F = 0; F < H.Tensors.size(); ++F)
      if (!Claimed[F] && sameElements(H.Tensors[F].Shape, P.Tensors[T].Shape)) {
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

bool saveWeights(const plan::Plan &P, const std::vector<std::string> &Names,
                 const std::vector<std::vector<char>> &Data, ElementType Type,
                 const std::string &Path, std::string &Error) {
  const char *DType = Type == ElementType::F32    ? "F32"
                      : Type == ElementType::BF16 ? "BF16"
                                                  : "F16";
  dsc::safetensors::Writer Out;
  Out.metadata("format", "pt");
  Out.metadata("producer", "dsrun");
  for (uint32_t T = 0; T < P.Tensors.size(); ++T) {
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

} // namespace dsrun
