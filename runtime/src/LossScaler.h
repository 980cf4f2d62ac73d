//===- LossScaler.h - fp16 loss scaling as DeepSpeed does it ----*- C++ -*-===//
//
// With fp16 parameters the loss's gradient is multiplied by a scale so
// that small gradients survive in fp16; the optimizer divides it out. A
// step whose gradients overflow (an inf or NaN anywhere, on any rank) is
// skipped: no update, no optimizer or scheduler step. The dynamic scaler
// follows DeepSpeed 0.19's DynamicLossScaler (runtime/fp16/loss_scaler.py):
//   - an overflow with hysteresis left only uses up one unit of it; with
//     none left the scale halves (not below min_loss_scale; an overflow at
//     the minimum ends the run, as DeepSpeed raises);
//   - after loss_scale_window clean steps since the last overflow the
//     scale doubles and the hysteresis refills (consecutive_hysteresis
//     refills it after every clean step instead).
// DeepSpeed's ZeRO optimizers update the scaler before they unscale, so a
// step whose update doubles the scale divides its gradients by the doubled
// scale: scaleIfApplied() is that divisor, known before the step runs.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_LOSSSCALER_H
#define DSRUN_LOSSSCALER_H

#include "dsc/PlanFormat.h"

#include <cstdint>
#include <string>

namespace dsrun {

class LossScaler {
public:
  /// What a checkpoint keeps of it.
  struct State {
    double Scale = 1;
    int64_t Iteration = 0;
    int64_t LastOverflow = -1;
    uint32_t Hysteresis = 0;
  };

  /// Scale 1, never changing: bf16 and fp32 training.
  LossScaler() = default;
  /// The plan's fp16 settings (static or dynamic); scale 1 for other types.
  explicit LossScaler(const dsc::plan::Info &S);

  bool dynamic() const { return Dynamic; }
  /// The scale this step's backward multiplies the loss gradient by.
  double scale() const { return Now.Scale; }
  /// What the optimizer divides this step's gradients by if they do not
  /// overflow: the scale after update(false).
  double scaleIfApplied() const;
  /// After a step: whether its gradients overflowed. Returns "" or why the
  /// run must stop (an overflow at the minimum scale).
  std::string update(bool Overflow);

  const State &state() const { return Now; }
  void restore(const State &S) { Now = S; }

private:
  /// Whether a clean step now ends a window: loss_scale_window clean steps
  /// since the last overflow.
  bool windowEnds() const;

  bool Dynamic = false;
  uint32_t Window = 1000, DelayedShift = 1;
  bool Consecutive = false;
  double MinScale = 1;
  State Now;
};

} // namespace dsrun

#endif
