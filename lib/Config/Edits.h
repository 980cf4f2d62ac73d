//===- Edits.h - Text edits on a JSON file that keep its layout --*- C++ -*-===//
//
// Fix-its rename a key, remove a member or add one, touching only the bytes
// involved: comments, key order and spacing elsewhere stay as written.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_CONFIG_EDITS_H
#define DSC_LIB_CONFIG_EDITS_H

#include "dsc/Config/Json.h"
#include "dsc/Support/Diagnostic.h"

#include <string>

namespace dsc {

/// A JSON string literal for S.
std::string quoteJson(llvm::StringRef S);

/// Replaces the key of M (quotes included) with NewName.
TextEdit renameKey(const JsonMember &M, llvm::StringRef NewName);

/// Removes member Index of Object with the separator next to it.
TextEdit removeMember(llvm::StringRef Text, const JsonValue &Object,
                      size_t Index);

/// Adds "Key": ValueText as the last member of Object, indented like its
/// last member.
TextEdit appendMember(llvm::StringRef Text, const JsonValue &Object,
                      llvm::StringRef Key, llvm::StringRef ValueText);

/// Replaces the value of M with NewValueText.
TextEdit replaceValue(const JsonMember &M, llvm::StringRef NewValueText);

} // namespace dsc

#endif
