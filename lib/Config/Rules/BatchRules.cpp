//===- BatchRules.cpp - The batch triple (docs/lint.md) -------------------===//
//
// DeepSpeed derives the missing members of (train_batch_size, micro batch,
// gradient accumulation) with floor division and then asserts
// train_batch_size == micro x accumulation x world size. With --world-size
// the check is exact; without it, only combinations that no world size can
// satisfy are reported.
//
//===----------------------------------------------------------------------===//

#include "../LintContext.h"

using namespace llvm;

namespace dsc {

static constexpr StringRef TrainBatch = "train_batch_size";
static constexpr StringRef Micro = "train_micro_batch_size_per_gpu";
static constexpr StringRef Accum = "gradient_accumulation_steps";

void checkBatch(LintContext &C) {
  const ConfigView &V = C.View;
  if (V.getBool("elasticity.enabled").value_or(false))
    return; // Elasticity owns the batch (ElasticityRules.cpp).
  for (StringRef Key : {TrainBatch, Micro, Accum})
    if (V.isAuto(Key))
      return; // Filled by an integration, or already reported.
  // A key that is written but unusable was reported by the schema pass.
  auto Read = [&](StringRef Key, std::optional<int64_t> &Out) {
    Out = V.getInt(Key);
    return !V.has(Key) || (Out && *Out > 0);
  };
  std::optional<int64_t> T, M, G;
  if (!Read(TrainBatch, T) || !Read(Micro, M) || !Read(Accum, G))
    return;

  if (!T && !M && G) {
    C.report(Rule::BatchSize, C.rangeOf(Accum),
             "gradient_accumulation_steps alone does not define a batch: "
             "DeepSpeed needs train_batch_size or "
             "train_micro_batch_size_per_gpu (AssertionError)");
    return;
  }
  if (!T && !M) {
    // No batch key at all: a partial config that a launcher completes.
    C.report(Rule::BatchSize, Severity::Warning, C.rangeOf(Accum),
             "the config gives neither train_batch_size nor "
             "train_micro_batch_size_per_gpu; DeepSpeed asserts unless the "
             "launcher writes one in (PyTorch Lightning and the autotuner "
             "do; the HF Trainer and accelerate fill only keys set to "
             "\"auto\")");
    return;
  }

  std::optional<int64_t> W = C.Options.WorldSize;
  // Words for the data-parallel size in messages.
  std::string Ranks = W ? "world size " + std::to_string(*W) : "";
  if (W && V.has("sequence_parallel_size")) {
    // Without an mpu DeepSpeed divides the world size by it.
    std::optional<int64_t> SP = V.getInt("sequence_parallel_size");
    if (!SP || *SP <= 0)
      return;
    if (*W % *SP != 0) {
      C.report(Rule::BatchSize, C.rangeOf("sequence_parallel_size"),
               "world size " + Twine(*W) + " is not a multiple of "
                   "sequence_parallel_size " + Twine(*SP) +
                   "; DeepSpeed's data-parallel size would not be whole");
      return;
    }
    Ranks = "data-parallel size " + std::to_string(*W / *SP) +
            " (world size " + std::to_string(*W) + " / sequence_parallel_size " +
            std::to_string(*SP) + ")";
    *W /= *SP;
  }

  StringRef Anchor = T ? TrainBatch : Micro;
  if (!W) {
    // No world size: flag only what no world size can satisfy.
    int64_t Known = M.value_or(1) * G.value_or(1);
    if (T && (M || G) && *T % Known != 0)
      C.report(Rule::BatchSize, C.rangeOf(Anchor),
               "train_batch_size " + Twine(*T) + " is not a multiple of " +
                   (M && G ? "micro batch x accumulation steps (" +
                                 Twine(*M) + " x " + Twine(*G) + ")"
                           : M ? "the micro batch (" + Twine(*M) + ")"
                               : "the accumulation steps (" + Twine(*G) +
                                     ")") +
                   "; no world size satisfies DeepSpeed's batch check")
          .note("pass --world-size to check the exact arithmetic");
    return;
  }

  // DeepSpeed's derivation (runtime/config.py _set_batch_related_parameters).
  int64_t TT, MM, GG;
  if (T && M && G) {
    TT = *T, MM = *M, GG = *G;
  } else if (T && M) {
    TT = *T, MM = *M, GG = *T / *M / *W;
  } else if (T && G) {
    TT = *T, GG = *G, MM = *T / *W / *G;
  } else if (M && G) {
    return; // train_batch_size = micro x accumulation x world: always fits.
  } else if (T) {
    TT = *T, GG = 1, MM = *T / *W;
  } else {
    return; // Only the micro batch: always fits.
  }
  auto Derived = [&](StringRef Name, int64_t Value) -> std::string {
    bool Given = (Name == Micro && M) || (Name == Accum && G);
    return Given ? std::to_string(Value)
                 : std::to_string(Value) + " (derived)";
  };
  if (MM <= 0 || GG <= 0) {
    C.report(Rule::BatchSize, C.rangeOf(Anchor),
             "at " + Ranks + " DeepSpeed derives " +
                 (MM <= 0 ? "a micro batch" : "gradient accumulation steps") +
                 " of " + Twine(MM <= 0 ? MM : GG) + " from train_batch_size " +
                 Twine(TT) + "; it must be greater than 0")
        .note("train_batch_size must be at least micro batch x world size");
    return;
  }
  if (TT != MM * GG * *W) {
    Diagnostic &D = C.report(
        Rule::BatchSize, C.rangeOf(Anchor),
        "train_batch_size " + Twine(TT) + " != micro batch " +
            Derived(Micro, MM) + " x accumulation steps " +
            Derived(Accum, GG) + " x " + Ranks + " = " +
            Twine(MM * GG * *W) + "; DeepSpeed's batch check fails");
    if (T && M && G && TT % (MM * GG) == 0)
      D.note("these values fit a data-parallel size of " +
             Twine(TT / (MM * GG)) +
             "; leave train_batch_size out and DeepSpeed derives it for any "
             "size");
  }
}

} // namespace dsc
