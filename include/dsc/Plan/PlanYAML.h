//===- PlanYAML.h - The plan as YAML and as a file --------------*- C++ -*-===//
//
// The YAML form shows every field under the name PlanFormat.h gives it;
// reading it back gives the same plan, so YAML -> plan.bin -> YAML is
// lossless (the plan holds no floating-point values).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PLAN_PLANYAML_H
#define DSC_PLAN_PLANYAML_H

#include "dsc/PlanCheck.h"
#include "dsc/PlanFormat.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace dsc {

void writePlanYAML(llvm::raw_ostream &OS, const plan::Plan &P);
llvm::Expected<plan::Plan> readPlanYAML(llvm::StringRef Text,
                                        llvm::StringRef Path);

/// Reads plan.bin, or a YAML plan (told apart by the binary header), and
/// checks its consistency as far as the planner has come (a partial plan
/// for the pass driver, dsc opt).
llvm::Expected<plan::Plan>
readPlanFile(llvm::StringRef Path,
             plan::PlanStage Stage = plan::PlanStage::Complete);
llvm::Error writePlanFile(llvm::StringRef Path, const plan::Plan &P);

} // namespace dsc

#endif
