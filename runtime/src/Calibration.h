//===- Calibration.h - What dsrun measured, for dsc plan --calibration ----===//
//
// dsrun --calibration-out writes the device memory outside the plan's
// arena and the rates it measured in the steady steps, under the names of
// the plan's hardware figures (PlanFormat.h), so that the next dsc plan
// estimates with this machine's numbers. Host code, tested without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_CALIBRATION_H
#define DSRUN_CALIBRATION_H

#include "dsc/PlanFormat.h"

#include <string>

namespace dsrun {

struct Calibration {
  int Ranks = 1;
  /// NCCL's CTA policy the run used: its collective and product rates
  /// hold for that policy alone (dsc plan checks it).
  dsc::plan::CommCtaPolicy CtaPolicy = dsc::plan::CommCtaPolicy::Default;
  uint64_t CudaContextBytes = 0, CublasWorkspaceBytes = 0, NcclBytes = 0;
  /// Rates the run measured; a figure left at zero was not measured and
  /// is not written (the planner keeps its own).
  dsc::plan::Hardware Rates;
};

/// Writes C as YAML; false with Error when the file cannot be written.
bool writeCalibration(const std::string &Path, const Calibration &C,
                      std::string &Error);

} // namespace dsrun

#endif
