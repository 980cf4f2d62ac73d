//===- Elasticity.h - DeepSpeed's elastic batch-size algorithm --*- C++ -*-===//
//
// A transcription of deepspeed/elasticity/elasticity.py (versions 0.1 and
// 0.2): from the acceptable micro batches and the largest global batch it
// picks the global batch that runs on the most GPU counts, and the list of
// those counts. Given a world size it also picks the micro batch.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_CONFIG_ELASTICITY_H
#define DSC_CONFIG_ELASTICITY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace dsc {

struct ElasticSettings {
  std::vector<int64_t> MicroBatches;
  int64_t MaxTrainBatch = 2000;
  int64_t MinGpus = 1;
  int64_t MaxGpus = 10000;
  bool PreferLarger = true;
  double Version = 0.2;
  int64_t GpusPerNode = 1;
  int64_t ModelParallel = 1;
};

struct ElasticPlan {
  int64_t FinalBatch = 0;
  std::vector<int64_t> ValidGpus;
  /// Set when a world size was given.
  std::optional<int64_t> MicroBatch;
};

/// DeepSpeed's compute_elastic_config. WorldSize 0 means unknown (version
/// 0.2 then fails, as DeepSpeed does without WORLD_SIZE). Errors carry
/// DeepSpeed's reason.
llvm::Expected<ElasticPlan> computeElasticPlan(const ElasticSettings &S,
                                               int64_t WorldSize);

} // namespace dsc

#endif
