//===- SchemaCommands.cpp - dsc explain, dsc schema -----------------------===//

#include "Commands.h"

namespace dsc::tool {

llvm::cl::SubCommand ExplainCommand("explain", "Explain a config key");
llvm::cl::SubCommand SchemaCommand("schema", "Print the config schema");

int runExplain() { return ExitUsage; }
int runSchema() { return ExitUsage; }

} // namespace dsc::tool
