//===- Weights.cpp - A model's parameters as safetensors ------------------===//

#include "dsc/Graph/Weights.h"

#include "dsc/SafeTensors.h"
#include "dsc/Version.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace dsc {

namespace {

/// safetensors' name of an ONNX element type, "" where it has none.
const char *safetensorsType(DType T) {
  switch (T) {
  case DType::Float:
    return "F32";
  case DType::Float16:
    return "F16";
  case DType::BFloat16:
    return "BF16";
  case DType::Double:
    return "F64";
  case DType::Int64:
    return "I64";
  case DType::Int32:
    return "I32";
  case DType::Int16:
    return "I16";
  case DType::Int8:
    return "I8";
  case DType::UInt8:
    return "U8";
  case DType::Bool:
    return "BOOL";
  default:
    return "";
  }
}

} // namespace

Error writeInitializers(const Model &M, ArrayRef<std::string> Names,
                        StringRef Path) {
  safetensors::Writer W;
  W.metadata("format", "pt");
  W.metadata("producer", std::string("dsc ") + Version);
  for (const std::string &Name : Names) {
    const Initializer *I = M.initializer(Name);
    if (!I)
      return createStringError(inconvertibleErrorCode(),
                               "%s: the model has no initializer '%s'",
                               M.Path.c_str(), Name.c_str());
    const char *Type = safetensorsType(I->Type);
    if (!*Type)
      return createStringError(
          inconvertibleErrorCode(),
          "%s: initializer '%s' is of type %s, which safetensors cannot hold",
          M.Path.c_str(), Name.c_str(), dtypeName(I->Type).str().c_str());
    Expected<std::vector<char>> Bytes = readInitializer(M, *I);
    if (!Bytes)
      return Bytes.takeError();
    W.add(Name, Type, I->Dims, Bytes->data(), Bytes->size());
  }
  std::vector<char> File = W.bytes();
  std::error_code EC;
  raw_fd_ostream OS(Path, EC, sys::fs::OF_None);
  if (EC)
    return createStringError(EC, "%s: %s", Path.str().c_str(),
                             EC.message().c_str());
  OS.write(File.data(), File.size());
  return Error::success();
}

} // namespace dsc
