//===- LossScaler.cpp - fp16 loss scaling as DeepSpeed does it ------------===//

#include "LossScaler.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace plan = dsc::plan;

namespace dsrun {

LossScaler::LossScaler(const plan::Info &S) {
  if (S.ParamDType != plan::DType::F16)
    return;
  double Static = std::strtod(S.LossScale.c_str(), nullptr);
  if (Static > 0) {
    Now.Scale = Static;
    return;
  }
  Dynamic = true;
  Now.Scale = std::ldexp(1.0, int(S.InitialScalePower));
  Window = S.LossScaleWindow;
  DelayedShift = S.Hysteresis;
  Now.Hysteresis = S.Hysteresis;
  Consecutive = S.ConsecutiveHysteresis;
  MinScale = S.MinLossScale;
}

bool LossScaler::windowEnds() const {
  int64_t Stable = Now.Iteration - Now.LastOverflow - 1;
  return Stable > 0 && Stable % Window == 0;
}

double LossScaler::scaleIfApplied() const {
  return Dynamic && windowEnds() ? Now.Scale * 2 : Now.Scale;
}

std::string LossScaler::update(bool Overflow) {
  if (!Dynamic)
    return "";
  if (Overflow) {
    // (A hysteresis of 0 acts as 1: DeepSpeed would never lower the scale.)
    if (DelayedShift <= 1 || Now.Hysteresis <= 1) {
      if (Now.Scale == MinScale)
        return "the fp16 gradients overflowed at the minimum loss scale (" +
               std::to_string(int64_t(MinScale)) +
               ", fp16.min_loss_scale); DeepSpeed stops here too. Train in "
               "bf16, or lower the learning rate";
      Now.Scale = std::max(Now.Scale / 2, MinScale);
    } else {
      --Now.Hysteresis;
    }
    Now.LastOverflow = Now.Iteration;
  } else {
    if (Consecutive)
      Now.Hysteresis = DelayedShift;
    if (windowEnds()) {
      if (!Consecutive)
        Now.Hysteresis = DelayedShift;
      Now.Scale *= 2;
    }
  }
  ++Now.Iteration;
  return "";
}

} // namespace dsrun
