//===- SchemaParts.h - The pieces of the schema table -----------*- C++ -*-===//
//
// The table is one logical table written in a few files, one per area of the
// config, so that each stays readable. Schema.cpp joins them in this order.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LIB_CONFIG_SCHEMAPARTS_H
#define DSC_LIB_CONFIG_SCHEMAPARTS_H

#include "dsc/Config/Schema.h"

namespace dsc::schema {

llvm::ArrayRef<KeySpec> topLevelKeys();
llvm::ArrayRef<KeySpec> zeroKeys();
llvm::ArrayRef<KeySpec> precisionKeys();
llvm::ArrayRef<KeySpec> optimizerKeys();
llvm::ArrayRef<KeySpec> featureKeys();
llvm::ArrayRef<KeySpec> dataEfficiencyKeys();
llvm::ArrayRef<KeySpec> compressionKeys();
llvm::ArrayRef<KeySpec> monitoringKeys();

} // namespace dsc::schema

#endif
