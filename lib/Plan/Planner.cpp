//===- Planner.cpp - The pass pipeline ------------------------------------===//

#include "PlanInternal.h"

#include "dsc/PlanCheck.h"

using namespace llvm;

namespace dsc {

ArrayRef<PlanPass> planPasses() {
  static const PlanPass Passes[] = {
      {"partition", "flat layout, shards, sub-groups, rank classes",
       runPartitionPass},
      {"buckets", "gradient reduction buckets in backward order",
       runBucketPass},
      {"prefetch", "stage-3 fetch units", runPrefetchPass},
      {"offload", "host and NVMe transfers", runOffloadPass},
      {"schedule", "the instruction stream of one step", runSchedulePass},
      {"memory", "buffers, lifetimes and arena offsets", runMemoryPass},
      {"placement", "views: where each tensor, shard, chunk and staging "
                    "area sits in the buffers",
       runPlacementPass},
      {"estimate", "per-rank peaks, DeepSpeed's figures, step time",
       runEstimatePass},
  };
  // One stage of the verifier per pass, in this order (dsc/PlanCheck.h).
  static_assert(sizeof(Passes) / sizeof(Passes[0]) ==
                    size_t(plan::PlanStage::Complete),
                "a pass without its PlanStage");
  return Passes;
}

Expected<plan::Plan>
buildPlan(const PlanInputs &In, const PlanOptions &Options,
          const std::function<void(StringRef, const plan::Plan &)> &After) {
  Expected<plan::Plan> P = lowerToPlan(In, Options);
  if (!P)
    return P.takeError();
  if (After)
    After("lower", *P);
  for (const PlanPass &Pass : planPasses()) {
    if (Error E = Pass.Run(*P))
      return createStringError(inconvertibleErrorCode(), "%s: %s", Pass.Name,
                               toString(std::move(E)).c_str());
    if (After)
      After(Pass.Name, *P);
  }
  std::string Problem = plan::checkPlan(*P);
  if (!Problem.empty())
    return planError("internal error: the plan is inconsistent: " + Problem);
  return P;
}

} // namespace dsc
