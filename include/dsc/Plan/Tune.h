//===- Tune.h - The configs dsc tune plans and how it ranks them -*- C++ -*-===//
//
// dsc tune plans the configs DeepSpeed lets a user choose around theirs and
// ranks those that fit by the planned tokens a second. Each choice is a
// few keys set on the user's config; every other key stays as written.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_PLAN_TUNE_H
#define DSC_PLAN_TUNE_H

#include "dsc/PlanFormat.h"

#include <string>
#include <utility>
#include <vector>

namespace dsc {

struct TuneChoice {
  uint32_t Stage = 0;
  plan::OffloadDevice Optimizer = plan::OffloadDevice::None;
  plan::OffloadDevice Params = plan::OffloadDevice::None;
  /// Every layer's activations recomputed (dsc plan --checkpoint-layers).
  bool Checkpoint = false;
  uint32_t MicroBatch = 1, GradAccum = 1;
  /// Where set (not 0 or -1): the reduction (and stage 1/2 all-gather)
  /// buckets, the stage-3 prefetch bucket and live parameters,
  /// overlap_comm.
  uint64_t Bucket = 0, Prefetch = 0, MaxLive = 0;
  int OverlapComm = -1;
  /// Stage 3, where set (not 0): stage3_max_reuse_distance and
  /// stage3_max_live_parameters both this many elements, enough
  /// (tuneKeepElements) that every parameter the forward gathers stays
  /// gathered until its backward: the backward gathers nothing, for the
  /// model's 16-bit parameters in device memory. It takes MaxLive's place.
  uint64_t Keep = 0;
  /// NCCL's CTA policy planned (dsc plan --comm-cta-policy): not a config
  /// key, a plan option tune names beside the keys.
  plan::CommCtaPolicy Policy = plan::CommCtaPolicy::Default;
  /// Stage 3 over several nodes, where set (not 0): ZeRO++ hpZ's groups or
  /// MiCS's shard groups of this many ranks (a node's).
  uint32_t HpzGroup = 0, MicsShard = 0;
  /// Tune searches those groups: the choice sets both keys, off where it
  /// uses neither (a user's own hpZ or MiCS would make every choice one),
  /// and with MiCS turns ZeRO++'s quantization off (MiCS ignores it).
  bool SetsGroups = false;

  /// The config keys it sets: dotted path, JSON value.
  std::vector<std::pair<std::string, std::string>> settings() const;
  /// "ZeRO 3, micro batch 4 x 2, optimizer on the CPU, checkpointed".
  std::string describe() const;
};

/// Where the user's config lets tune put state on NVMe: the optimizer's
/// (offload_optimizer.nvme_path is set) and the parameters' (both paths).
struct NvmeChoices {
  bool Optimizer = false, Params = false;
};

/// Every choice for SamplesPerRank samples a rank takes in a step (the
/// global batch over the world size): ZeRO 0-3; the optimizer on the
/// device or the CPU (stage 1-3), the parameters too at stage 3, and at
/// stage 3 (DeepSpeed's only stage for NVMe) the optimizer on NVMe, with
/// the parameters too, where Nvme allows; over nodes of NodeRanks ranks
/// (0: one node), stage 3 also with ZeRO++ hpZ's groups and with MiCS's
/// shard groups of a node, which keep its gathers within the node, where
/// dsc plans them with the offload; layers checkpointed or not; each
/// micro batch that divides SamplesPerRank, up to MaxMicroBatch, with the
/// accumulation that makes up the rest.
std::vector<TuneChoice> tuneChoices(uint64_t SamplesPerRank,
                                    NvmeChoices Nvme = {},
                                    uint32_t NodeRanks = 0,
                                    uint32_t MaxMicroBatch = 64);

/// Where each group of Choices begins: consecutive choices that differ
/// only in the micro batch, ascending (as tuneChoices lists them). A
/// larger micro batch needs more memory, so a group can stop at the first
/// that does not fit.
std::vector<size_t> microBatchGroups(const std::vector<TuneChoice> &Choices);

/// The choices that differ from Best in the bucket sizes (5e7, 2e8 and
/// 5e8 elements: reduction, stage 1/2 all-gather, stage-3 prefetch), at
/// stage 3 the live parameters (1e8 and DeepSpeed's 1e9), and
/// overlap_comm: what communication that holds the step up depends on.
/// A Best that keeps its parameters (Keep) keeps them in every variant.
std::vector<TuneChoice> tuneRefinements(const TuneChoice &Best);

/// The reuse distance that keeps every parameter of a model of
/// ModelElems elements gathered from its forward to its backward: the
/// parameters fetched between one's two uses are at most twice the model
/// (the rest of the forward and the backward up to it), three times with
/// every layer checkpointed (its recomputation too), rounded up to one
/// significant digit as configs write it (8.03e9 elements: 2e10, 3e10
/// checkpointed).
uint64_t tuneKeepElements(uint64_t ModelElems, bool Checkpoint);
/// Whether a plan of StepNanos that changes Changed of the user's keys
/// ranks before one of OtherNanos changing OtherChanged: steps within
/// 0.1 % of each other tie (the estimate cannot tell them apart; a step's
/// rank is its log in steps of 0.1 %, a strict order), and of a tie the
/// one that changes fewer keys goes first.
bool tunedBefore(uint64_t StepNanos, size_t Changed, uint64_t OtherNanos,
                 size_t OtherChanged);

/// What holds a plan's step up: exposed communication or offload,
/// whichever the estimate says holds it up most (more than a tenth of
/// it), else compute.
enum class StepLimit { Compute, Communication, Offload };
StepLimit stepLimit(const plan::Plan &P);
/// "compute", "exposed communication", "offload".
const char *stepLimitName(StepLimit L);

} // namespace dsc

#endif
