//===- Planner.h - Lower (config, model, world size) to a plan --*- C++ -*-===//
//
// The planner reads the resolved config and the imported model, and runs
// the passes that fill a plan::Plan one part at a time:
//
//   lower      settings from the config, the machine; tensors and
//              modules; the training program (lib/Compute) cut into
//              ops and kernels                      (Settings.cpp, Lowering.cpp)
//   partition  flat layout, shards, sub-groups, rank classes  (Partition.cpp)
//   buckets    gradient reduction buckets in backward order   (Buckets.cpp)
//   prefetch   stage-3 fetch units                            (Prefetch.cpp)
//   offload    host/NVMe transfers of the optimizer step      (Offload.cpp)
//   schedule   the instruction stream of one step             (Schedule.cpp)
//   memory     buffers, lifetimes, arena offsets              (MemoryPlan.cpp)
//   placement  views of tensors, shards, chunks, staging      (Placement.cpp)
//   estimate   per-rank peaks, fixed costs, DeepSpeed's view  (Estimate.cpp)
//
// Lowering needs the config and the model; every pass after it reads and
// writes only the plan, so a test can build a plan by hand and run one
// pass (dsc plan --print-after=PASS prints the plan after it).
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PLAN_PLANNER_H
#define DSC_PLAN_PLANNER_H

#include "dsc/Compute/Passes.h"
#include "dsc/Config/ConfigView.h"
#include "dsc/Graph/Parameters.h"
#include "dsc/Graph/Dims.h"
#include "dsc/Plan/Hardware.h"
#include "dsc/Plan/TimeTables.h"
#include "dsc/PlanFormat.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <functional>

namespace dsc {

struct PlanOptions {
  uint32_t WorldSize = 1;
  uint32_t Nodes = 1;
  /// 0: all ranks on one node.
  uint32_t GpusPerNode = 0;
  /// Values for symbolic model dims (batch-like ones come from the micro
  /// batch).
  DimBindings Dims;
  std::optional<int64_t> SeqLen;
  /// The model checkpoints activations per layer (HF
  /// gradient_checkpointing); DeepSpeed's activation_checkpointing section
  /// only configures how.
  bool CheckpointLayers = false;
  /// The attention algorithm to prefer where it fits (dsc plan
  /// --attention); none: the machine's order (HardwareProfile).
  std::optional<plan::AttentionAlgorithm> Attention;
  /// NCCL's CTA policy dsrun will run with (plan::Info::CtaPolicy).
  plan::CommCtaPolicy CtaPolicy = plan::CommCtaPolicy::Default;
  /// Kernels write into a copy's destination (compute::elideCopies).
  bool ElideCopies = true;
  /// Chains of pointwise kernels fused (compute::fusePointwiseChains).
  bool FusePointwise = true;
  /// Products add into the sum of their outputs (compute::accumulateProducts).
  bool AccumulateProducts = true;
  /// Compute fusion passes left out by name (fuse-rotary, ...).
  std::vector<std::string> SkipFusions;
  HardwareProfile Machine = defaultHardware();
  /// What the step minimizes.
  compute::LossKind Loss = compute::LossKind::CausalLM;
  /// Called after each pass of the compute pipeline (dsc plan
  /// --print-after=autodiff).
  std::function<void(llvm::StringRef, const compute::Graph &)>
      AfterComputePass;
};

/// What the planner works from. The config must have no "auto" left.
struct PlanInputs {
  const ConfigView &Config;
  llvm::StringRef ConfigText;
  const Model &Graph;
  const ModelFacts &Facts;
  uint64_t ModelHash = 0;
};

/// Settings and lowering: the plan's settings, tensors, modules and ops,
/// read from the config and the model. Everything after works on the plan
/// alone.
llvm::Expected<plan::Plan> lowerToPlan(const PlanInputs &In,
                                       const PlanOptions &Options);

/// A planner pass: fills its part of the plan from what is there.
struct PlanPass {
  const char *Name;
  const char *Summary;
  llvm::Error (*Run)(plan::Plan &);
};

/// The passes after lowering, in order.
llvm::ArrayRef<PlanPass> planPasses();

/// Lowers and runs every pass. After, when set, is called after lowering
/// ("lower") and after each pass with its name (for --print-after).
llvm::Expected<plan::Plan>
buildPlan(const PlanInputs &In, const PlanOptions &Options,
          const std::function<void(llvm::StringRef, const plan::Plan &)>
              &After = nullptr);

llvm::Error runPartitionPass(plan::Plan &P);
llvm::Error runBucketPass(plan::Plan &P);
llvm::Error runPrefetchPass(plan::Plan &P);
llvm::Error runOffloadPass(plan::Plan &P);
llvm::Error runSchedulePass(plan::Plan &P);
/// The schedule pass's last step: where the replay overlaps compute with
/// collectives, both take longer by Sharing's figures (TimeTables.h).
void chargeSharedGpu(plan::Plan &P, const SharedGpu &Sharing);
llvm::Error runMemoryPass(plan::Plan &P);
llvm::Error runPlacementPass(plan::Plan &P);
llvm::Error runEstimatePass(plan::Plan &P);

} // namespace dsc

#endif
