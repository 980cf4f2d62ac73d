//===- SchemaExport.h - The schema table for people and editors -*- C++ -*-===//
//
// Everything users read about keys comes from the one table: `dsc explain`,
// the JSON Schema editors validate against, and docs/config-keys.md.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_CONFIG_SCHEMAEXPORT_H
#define DSC_CONFIG_SCHEMAEXPORT_H

#include "dsc/Config/Schema.h"
#include "dsc/Support/DiagnosticEmitter.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

namespace dsc {

/// Entries a user may mean by Query: a dotted path (aliases allowed), or a
/// bare key name; every variant of a path is returned.
std::vector<const KeySpec *> findKeysForQuery(llvm::StringRef Query);

/// What a key is, its type, default, range, spellings, what each front end
/// does with "auto", and its doc line; sections also list their keys.
void explainKey(llvm::raw_ostream &OS, llvm::ArrayRef<const KeySpec *> Keys);

/// A JSON Schema (draft-07) of ds_config.json for editors.
llvm::json::Value buildJsonSchema();

/// docs/config-keys.md: every key, section by section.
void printKeyReference(llvm::raw_ostream &OS);

/// docs/diagnostics.md: every rule code.
void printRuleReference(llvm::raw_ostream &OS, llvm::ArrayRef<RuleInfo> Rules);

} // namespace dsc

#endif
