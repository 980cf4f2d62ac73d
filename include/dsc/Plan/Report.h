//===- Report.h - The estimate for people and for scripts -------*- C++ -*-===//

#ifndef DSC_PLAN_REPORT_H
#define DSC_PLAN_REPORT_H

#include "dsc/PlanFormat.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace dsc {

/// Whether the largest rank fits in the plan's GPU memory (true when the
/// plan names no memory size).
bool planFits(const plan::Plan &P);

/// The estimate as a table; Color highlights the verdict.
void printEstimateText(llvm::raw_ostream &OS, const plan::Plan &P);

/// One JSON document: world_size, zero_stage, ranks[] (ranks_alike,
/// device_peak_bytes, host_peak_bytes, nvme_bytes, by_category), the
/// deepspeed_estimate, step time and the fit verdict.
llvm::json::Value estimateJSON(const plan::Plan &P);

/// What the estimate says the config could do better, a sentence each: a
/// reduction bucket far larger than the model, stage-3 gathers that hold
/// compute up, an offload the step cannot hide.
std::vector<std::string> planAdvice(const plan::Plan &P);

/// 1.50 GiB, 12.0 MiB, 512 B.
std::string formatBytes(uint64_t Bytes);

} // namespace dsc

#endif
