//===- Weights.cpp - Initial weights from safetensors, and saving ---------===//

#include "Weights.h"
#include "Checkpoint.h"

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
    ElementType E = T.DType == "BF16" ? ElementType::BF16 : ElementType::F16;
    for (uint64_t I = 0; I < N; ++I)
      Out[I] = loadAs(B, I, E);
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

} // namespace

std::optional<InitialWeights> loadWeights(const plan::Plan &P,
                                          const std::string &Path,
                                          std::string &Error) {
  int Fd = open(Path.c_str(), O_RDONLY);
  if (Fd < 0) {
    Error = Path + ": cannot open: " + strerror(errno);
    return std::nullopt;
  }
  struct stat St;
  if (fstat(Fd, &St) != 0 || St.st_size < 8) {
    Error = Path + ": not a safetensors file (too short)";
    close(Fd);
    return std::nullopt;
  }
  uint64_t Size = uint64_t(St.st_size);
  void *Map = mmap(nullptr, Size, PROT_READ, MAP_PRIVATE, Fd, 0);
  close(Fd);
  if (Map == MAP_FAILED) {
    Error = Path + ": cannot map: " + strerror(errno);
    return std::nullopt;
  }
  struct Unmap {
    void *M;
    uint64_t S;
    ~Unmap() { munmap(M, S); }
  } Guard{Map, Size};
  const char *Data = static_cast<const char *>(Map);
  dsc::safetensors::Header H;
  std::string E;
  if (!dsc::safetensors::readHeader(Data, Size, Size, H, E)) {
    Error = Path + ": " + E;
    return std::nullopt;
  }
  const char *Payload = Data + H.DataStart;
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
  for (uint32_t T = 0; T < P.Tensors.size(); ++T)
    Out.add(Names[T].empty() ? P.Tensors[T].Name : Names[T], DType,
            P.Tensors[T].Shape, Data[T].data(), Data[T].size());
  const std::vector<char> &Bytes = Out.bytes();
  AtomicFile File;
  return File.open(Path, Error) && File.write(Bytes.data(), Bytes.size(), Error) &&
         File.commit(Error);
}

} // namespace dsrun
