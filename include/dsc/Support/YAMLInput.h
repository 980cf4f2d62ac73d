//===- YAMLInput.h - Read a YAML document with located errors ----*- C++ -*-===//

#ifndef DSC_SUPPORT_YAMLINPUT_H
#define DSC_SUPPORT_YAMLINPUT_H

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLTraits.h"

#include <string>

namespace dsc {

/// Reads Text, named Path, into Value with LLVM's YAML I/O. A YAML error
/// comes back as its located diagnostic (path:line:col); a document that
/// gives no error and yet no mapping as "Path: not <What>".
template <class T>
llvm::Error readYAMLInto(T &Value, llvm::StringRef Text, llvm::StringRef Path,
                         llvm::StringRef What) {
  std::string Errors;
  llvm::yaml::Input In(llvm::MemoryBufferRef(Text, Path), nullptr,
                       [](const llvm::SMDiagnostic &D, void *Ctx) {
                         llvm::raw_string_ostream OS(
                             *static_cast<std::string *>(Ctx));
                         D.print(nullptr, OS, /*ShowColors=*/false);
                       },
                       &Errors);
  In >> Value;
  if (!In.error())
    return llvm::Error::success();
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      Errors.empty() ? (Path + ": not " + What).str()
                     : llvm::StringRef(Errors).rtrim().str());
}

} // namespace dsc

#endif
