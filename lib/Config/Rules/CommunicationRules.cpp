//===- CommunicationRules.cpp - Gradient reduction (docs/lint.md) ---------===//

#include "../LintContext.h"

using namespace llvm;

namespace dsc {

void checkCommunication(LintContext &C) {
  const ConfigView &V = C.View;
  std::optional<int64_t> Stage = V.zeroStage();
  std::optional<std::string> Op = V.getString("gradient_allreduce_op");
  bool Sum = Op && StringRef(*Op).equals_insensitive("sum");
  if (Sum) {
    const char *Why = nullptr;
    if (Stage && *Stage == 3)
      Why = "ZeRO stage 3";
    else if (V.has("zero_optimization.zenflow") &&
             V.find("zero_optimization.zenflow")->Kind == JsonKind::Object)
      Why = "ZenFlow";
    else if (V.getBool("compile.deepcompile").value_or(false))
      Why = "DeepCompile";
    if (Why)
      C.report(Rule::Communication, C.rangeOf("gradient_allreduce_op"),
               Twine("gradient_allreduce_op \"sum\" is not supported with ") +
                   Why);
  }

  // Stage 2 (averaging) and stage 3 reduce-scatter: no pre-scaling.
  if (!Stage || *Stage < 2 ||
      !V.getBool("zero_optimization.reduce_scatter").value_or(true))
    return;
  if (*Stage == 2 && Sum)
    return;
  std::string StageText = std::to_string(*Stage);
  if (V.getBool("prescale_gradients").value_or(false))
    C.report(Rule::Communication, C.rangeOf("prescale_gradients"),
             "prescale_gradients is not supported with ZeRO stage " +
                 StageText + " and reduce_scatter");
  if (std::optional<double> F = V.getNumber("gradient_predivide_factor");
      F && *F != 1.0)
    C.report(Rule::Communication, C.rangeOf("gradient_predivide_factor"),
             "gradient_predivide_factor must be 1.0 with ZeRO stage " +
                 StageText + " and reduce_scatter, not " +
                 C.spellingOf("gradient_predivide_factor"));
}

} // namespace dsc
