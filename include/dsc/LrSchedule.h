//===- LrSchedule.h - DeepSpeed's learning-rate schedules -------*- C++ -*-===//
//
// The learning rate (and, for OneCycle, beta1 and beta2) of every optimizer
// step, as deepspeed.runtime.lr_schedules (0.19.6) computes them. DeepSpeed
// builds the scheduler before the first step (which sets the first step's
// rate) and calls step() after each optimizer step, so step k (from 1)
// runs at the scheduler's last_batch_iteration k - 2: -1 for the first.
//
//   WarmupLR        warmup_min_lr 0, warmup_max_lr (optimizer lr),
//                   warmup_num_steps 1000, warmup_type log | linear
//   WarmupDecayLR   + total_num_steps (required); warmup_max_lr 0.001;
//                   then linear decay to 0 at total_num_steps
//   WarmupCosineLR  total_num_steps (required), warmup_min_ratio 0,
//                   warmup_num_steps 1000, cos_min_ratio 1e-4, warmup_type;
//                   a ratio of the optimizer lr, 0 on the first step
//   LRRangeTest     lr_range_test_min_lr 1e-3, lr_range_test_step_size 2000,
//                   lr_range_test_step_rate 1, lr_range_test_staircase false
//   OneCycle        cycle_min_lr, cycle_max_lr (required), decay_lr_rate 0,
//                   cycle_first_step_size 2000, cycle_second_step_size,
//                   cycle_first_stair_count 0, cycle_second_stair_count,
//                   decay_step_size 0, cycle_momentum true, cycle_min_mom
//                   0.8, cycle_max_mom 0.9, decay_mom_rate 0 (momentum
//                   cycles beta1 inversely and sets beta2 to 0.99)
//
// Parameters travel in plan.bin as "name=value" text. Dependency-free: dsc
// checks a schedule when it plans, dsrun runs it.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_LRSCHEDULE_H
#define DSC_LRSCHEDULE_H

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace dsc::schedule {

/// What the optimizer uses at one step.
struct Hyper {
  double Lr, Beta1, Beta2;
};

class Schedule {
public:
  /// Type "" is a constant rate. Params are "name=value" (true/false and
  /// log/linear as text). Returns "" or what DeepSpeed would refuse.
  std::string parse(const std::string &Type,
                    const std::vector<std::string> &Params) {
    this->Type = Type;
    Values.clear();
    Texts.clear();
    for (const std::string &P : Params) {
      size_t Eq = P.find('=');
      if (Eq == std::string::npos)
        return "scheduler parameter '" + P + "' is not name=value";
      std::string Name = P.substr(0, Eq), Text = P.substr(Eq + 1);
      Texts[Name] = Text;
      char *End = nullptr;
      double V = std::strtod(Text.c_str(), &End);
      if (Text == "true" || Text == "false")
        V = Text == "true";
      else if (!Text.empty() && *End == '\0')
        ;
      else
        continue; // A word (warmup_type): text only.
      Values[Name] = V;
    }
    if (Type.empty())
      return "";
    if (Type == "WarmupLR" || Type == "WarmupDecayLR" ||
        Type == "WarmupCosineLR") {
      if (Type != "WarmupLR" && !Values.count("total_num_steps"))
        return Type + " needs scheduler.params.total_num_steps";
      double N = get("warmup_num_steps", 1000);
      if (N <= 0 || N != std::floor(N))
        return "scheduler.params.warmup_num_steps must be a positive "
               "integer (DeepSpeed raises ValueError)";
      return "";
    }
    if (Type == "OneCycle") {
      if (!Values.count("cycle_min_lr") || !Values.count("cycle_max_lr"))
        return "OneCycle needs scheduler.params.cycle_min_lr and cycle_max_lr";
      return "";
    }
    if (Type == "LRRangeTest")
      return "";
    return "scheduler '" + Type + "' is not one of DeepSpeed's (WarmupLR, "
           "WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest); dsrun does "
           "not run torch.optim.lr_scheduler classes";
  }

  /// The optimizer's hyperparameters at step Step (from 1), given its
  /// configured lr and betas.
  Hyper at(unsigned Step, double Lr, double Beta1, double Beta2) const {
    double I = double(Step) - 2; // last_batch_iteration
    if (Type == "WarmupLR" || Type == "WarmupDecayLR") {
      double Min = get("warmup_min_lr", 0);
      double Max = get("warmup_max_lr", Type == "WarmupLR" ? Lr : 0.001);
      if (I < 0)
        return {Min, Beta1, Beta2};
      double W = std::max(2.0, get("warmup_num_steps", 1000));
      double Gamma;
      if (I < W)
        Gamma = warmup(I, W);
      else if (Type == "WarmupLR")
        Gamma = 1;
      else {
        double T = get("total_num_steps", 0);
        Gamma = std::max(0.0, (T - I) / std::max(1.0, T - W));
      }
      return {Min + (Max - Min) * Gamma, Beta1, Beta2};
    }
    if (Type == "WarmupCosineLR") {
      if (I < 0)
        return {0, Beta1, Beta2};
      double W = std::max(2.0, get("warmup_num_steps", 1000));
      double Ratio;
      if (I < W) {
        double MinRatio = get("warmup_min_ratio", 0);
        Ratio = MinRatio + warmup(I, W) * (1 - MinRatio);
      } else {
        double T = get("total_num_steps", 0);
        double Progress = std::min(1.0, (I - W + 1) / std::max(1.0, T - W));
        double CosMin = get("cos_min_ratio", 1e-4);
        Ratio = std::max(0.0, CosMin + (1 - CosMin) *
                                           (1 + std::cos(M_PI * Progress)) / 2);
      }
      return {Lr * Ratio, Beta1, Beta2};
    }
    if (Type == "LRRangeTest") {
      double Min = get("lr_range_test_min_lr", 1e-3);
      double Size = get("lr_range_test_step_size", 2000);
      double Interval = (I + 1) / Size;
      if (get("lr_range_test_staircase", 0) != 0)
        Interval = std::floor(Interval);
      return {Min * (1 + get("lr_range_test_step_rate", 1) * Interval), Beta1,
              Beta2};
    }
    if (Type == "OneCycle")
      return oneCycle(I, Beta1, Beta2);
    return {Lr, Beta1, Beta2};
  }

  const std::string &type() const { return Type; }

private:
  double get(const std::string &Name, double Default) const {
    auto It = Values.find(Name);
    return It == Values.end() ? Default : It->second;
  }
  /// The warmup's fraction at iteration I of W: log unless 'linear'.
  double warmup(double I, double W) const {
    auto It = Texts.find("warmup_type");
    if (It != Texts.end() && It->second == "linear")
      return I / W;
    return std::log(I + 1) / std::log(W);
  }
  Hyper oneCycle(double I, double Beta1, double Beta2) const {
    double MinLr = get("cycle_min_lr", 0), MaxLr = get("cycle_max_lr", 0);
    double First = get("cycle_first_step_size", 2000);
    double Second = get("cycle_second_step_size", First);
    double FirstStairs = get("cycle_first_stair_count", 0);
    double SecondStairs = get("cycle_second_stair_count", FirstStairs);
    double DecayStep = get("decay_step_size", 0);
    double LrDecay = get("decay_lr_rate", 0), MomDecay = get("decay_mom_rate", 0);
    bool Momentum = get("cycle_momentum", 1) != 0;
    double MinMom = get("cycle_min_mom", 0.8), MaxMom = get("cycle_max_mom", 0.9);
    double Total = First + Second, Ratio = First / Total;
    if (I < 0) // The constructor's: the cycle's floor.
      return {MinLr, Momentum ? MinMom : Beta1, Momentum ? 0.99 : Beta2};
    if (I < Total) {
      double Batch = I + 1;
      double Cycle = std::floor(1 + Batch / Total);
      double X = 1 + Batch / Total - Cycle;
      double Scale, Stairs;
      if (X <= Ratio) {
        Scale = X / Ratio;
        Stairs = FirstStairs;
      } else {
        Scale = (X - 1) / (Ratio - 1);
        Stairs = SecondStairs;
      }
      if (Stairs > 0) {
        double In = std::fmod(Batch, Total);
        double Position = In <= First ? In * Stairs / First
                                      : (Total - In) * Stairs / Second;
        Scale = std::floor(Position) / Stairs;
      }
      return {MinLr + (MaxLr - MinLr) * Scale,
              Momentum ? MaxMom - (MaxMom - MinMom) * Scale : Beta1,
              Momentum ? 0.99 : Beta2};
    }
    double D = I - Total + 1;
    bool SkipLr = DecayStep == 0 || LrDecay == 0;
    bool SkipMom = DecayStep == 0 || MomDecay == 0;
    double Lr = SkipLr ? MinLr : MinLr / (1 + LrDecay * (D / DecayStep));
    double B1 = SkipMom ? MaxMom : MaxMom * (1 + MomDecay * (D / DecayStep));
    return {Lr, Momentum ? B1 : Beta1, Momentum ? 0.99 : Beta2};
  }

  std::string Type;
  std::map<std::string, double> Values;
  std::map<std::string, std::string> Texts;
};

} // namespace dsc::schedule

#endif
