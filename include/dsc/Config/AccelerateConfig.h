//===- AccelerateConfig.h - Lint an accelerate config YAML ------*- C++ -*-===//
//
// `accelerate config` writes a YAML file whose deepspeed_config section
// either holds a few DeepSpeed settings itself or names a ds_config JSON
// (deepspeed_config_file). Both are checked: the YAML's own keys, the traps
// of YAML 1.1 (an unquoted `no` is a boolean), accelerate's refusal to mix a
// config file with its own settings, and the referenced JSON with the world
// size (num_processes) and mixed precision the YAML implies.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_CONFIG_ACCELERATECONFIG_H
#define DSC_CONFIG_ACCELERATECONFIG_H

#include "dsc/Config/Lint.h"

namespace dsc {

/// Lints the accelerate YAML in BufferID. A deepspeed_config_file it names
/// is looked up as accelerate would (relative to the working directory),
/// then next to the YAML file, and linted too when found.
void lintAccelerateConfig(DiagnosticEngine &Engine, unsigned BufferID,
                          const LintOptions &Options);

/// Whether Path names a YAML file (.yaml or .yml).
bool isYamlPath(llvm::StringRef Path);

} // namespace dsc

#endif
