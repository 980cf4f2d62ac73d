//===- ConfigEdit.h - Set a key of a config, keeping its layout -*- C++ -*-===//

#ifndef DSC_CONFIG_CONFIGEDIT_H
#define DSC_CONFIG_CONFIGEDIT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace dsc {

/// Text with the value at the dotted Path ("zero_optimization.stage") set
/// to ValueText (JSON), adding the member, and the objects on its way,
/// where they are missing; every other byte stays as written. An error
/// where Text is not a JSON object or a value on the way is not an object.
llvm::Expected<std::string> setConfigValue(llvm::StringRef Text,
                                           llvm::StringRef Path,
                                           llvm::StringRef ValueText);

} // namespace dsc

#endif
