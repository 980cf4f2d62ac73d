//===- ElasticityRules.cpp - The elasticity block (docs/lint.md) ----------===//
//
// ElasticityConfig's checks, then DeepSpeed's own algorithm: with
// --world-size the lint knows whether that world size is one the block
// allows and which micro batch DeepSpeed will pick.
//
//===----------------------------------------------------------------------===//

#include "../LintContext.h"
#include "dsc/Config/Elasticity.h"

#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace dsc {

/// version is read with float(): a number or a numeric string.
static std::optional<double> versionOf(const JsonValue *V) {
  if (!V)
    return 0.2;
  if (V->isNumber())
    return V->number();
  double D;
  if (V->Kind == JsonKind::String && !StringRef(V->Str).trim().getAsDouble(D))
    return D;
  return std::nullopt;
}

void checkElasticity(LintContext &C) {
  const ConfigView &V = C.View;
  if (!V.getBool("elasticity.enabled").value_or(false))
    return;
  SMRange Section = C.rangeOf("elasticity");
  bool Usable = true;
  for (StringRef Key : {"max_train_batch_size", "micro_batch_sizes"})
    if (!V.has(("elasticity." + Key).str())) {
      C.report(Rule::Elasticity, Section,
               "enabled elasticity needs " + Key + " (ElasticityConfigError)");
      Usable = false;
    }

  ElasticSettings S;
  if (const JsonValue *MB = V.find("elasticity.micro_batch_sizes");
      MB && MB->Kind == JsonKind::Array) {
    for (const JsonValue &E : MB->Elements) {
      if (E.Kind != JsonKind::Int && E.Kind != JsonKind::Bool) {
        Usable = false; // Reported by the schema pass.
        continue;
      }
      int64_t N = E.Kind == JsonKind::Bool ? E.Bool : E.Int;
      if (N <= 0) {
        C.report(Rule::Elasticity, C.range(E),
                 "micro_batch_sizes must hold positive integers, not " +
                     Twine(N));
        Usable = false;
      }
      S.MicroBatches.push_back(N);
    }
  } else {
    Usable = false;
  }
  std::optional<int64_t> MinG = V.getInt("elasticity.min_gpus"),
                         MaxG = V.getInt("elasticity.max_gpus");
  if (MinG && MaxG && *MinG > *MaxG) {
    C.report(Rule::Elasticity, C.rangeOf("elasticity.min_gpus"),
             "min_gpus " + Twine(*MinG) + " is greater than max_gpus " +
                 Twine(*MaxG));
    Usable = false;
  }
  std::optional<double> Version = versionOf(V.find("elasticity.version"));
  if (!Version) {
    C.report(Rule::Elasticity, C.rangeOf("elasticity.version"),
             "elasticity.version must be a number such as 0.1 or 0.2");
    return;
  }
  if (*Version > 0.2) {
    C.report(Rule::Elasticity, C.rangeOf("elasticity.version"),
             "elasticity version " + C.spellingOf("elasticity.version") +
                 " is newer than DeepSpeed supports (0.2)");
    return;
  }
  if (*Version != 0.1 && *Version != 0.2) {
    C.report(Rule::Elasticity, C.rangeOf("elasticity.version"),
             "DeepSpeed has elasticity logic for versions 0.1 and 0.2 only, "
             "not " +
                 C.spellingOf("elasticity.version"));
    return;
  }

  if (!V.getBool("elasticity.ignore_non_elastic_batch_info").value_or(false))
    for (StringRef Key : {"train_batch_size", "train_micro_batch_size_per_gpu",
                          "gradient_accumulation_steps"})
      if (V.has(Key))
        C.report(Rule::Elasticity, C.rangeOf(Key),
                 "with elasticity enabled DeepSpeed sets " + Key +
                     " itself and refuses a config that gives it; remove it "
                     "or set elasticity.ignore_non_elastic_batch_info");

  std::optional<int64_t> MaxBatch = V.getInt("elasticity.max_train_batch_size");
  std::optional<int64_t> PerNode = V.getInt("elasticity.num_gpus_per_node");
  std::optional<int64_t> MP = V.getInt("elasticity.model_parallel_size");
  std::optional<bool> Larger = V.getBool("elasticity.prefer_larger_batch");
  if (!Usable || !MaxBatch || !MinG || !MaxG || !PerNode || !MP || !Larger ||
      *MaxBatch <= 0)
    return;
  S.MaxTrainBatch = *MaxBatch;
  S.MinGpus = *MinG;
  S.MaxGpus = *MaxG;
  S.GpusPerNode = *PerNode;
  S.ModelParallel = *MP;
  S.PreferLarger = *Larger;
  S.Version = *Version;

  int64_t World = C.Options.WorldSize.value_or(0);
  if (*Version == 0.2 && World == 0) {
    if (S.ModelParallel > 1 && S.GpusPerNode % S.ModelParallel != 0)
      C.report(Rule::Elasticity, C.rangeOf("elasticity.model_parallel_size"),
               "num_gpus_per_node " + Twine(S.GpusPerNode) +
                   " must be divisible by model_parallel_size " +
                   Twine(S.ModelParallel));
    return; // Version 0.2 needs the world size; nothing more to check.
  }
  Expected<ElasticPlan> Plan = computeElasticPlan(S, World);
  if (!Plan) {
    Diagnostic &D = C.report(Rule::Elasticity, Section,
                             toString(Plan.takeError()));
    if (World > 0 && *Version == 0.1) {
      if (Expected<ElasticPlan> Any = computeElasticPlan(S, 0)) {
        std::string List;
        for (int64_t G : Any->ValidGpus)
          List += (List.empty() ? "" : ", ") + std::to_string(G);
        D.note("global batch " + Twine(Any->FinalBatch) +
               " runs on these GPU counts: " + List);
      } else {
        consumeError(Any.takeError());
      }
    }
  }
}

} // namespace dsc
