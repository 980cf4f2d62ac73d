//===- LrScheduleTest.cpp - DeepSpeed's schedules, step by step -----------===//
//
// Expected values worked out by hand from deepspeed/runtime/lr_schedules.py
// (0.19.6): step k runs at last_batch_iteration k - 2.
//
//===----------------------------------------------------------------------===//

#include "dsc/LrSchedule.h"

#include <gtest/gtest.h>

#include <cmath>

using dsc::schedule::Hyper;
using dsc::schedule::Schedule;

namespace {

Schedule make(const std::string &Type, std::vector<std::string> Params) {
  Schedule S;
  EXPECT_EQ(S.parse(Type, Params), "");
  return S;
}

double lrAt(const Schedule &S, unsigned Step, double Lr = 1e-3) {
  return S.at(Step, Lr, 0.9, 0.999).Lr;
}

} // namespace

TEST(LrSchedule, NoneKeepsTheOptimizerRate) {
  Schedule S = make("", {});
  Hyper H = S.at(7, 3e-4, 0.9, 0.95);
  EXPECT_EQ(H.Lr, 3e-4);
  EXPECT_EQ(H.Beta2, 0.95);
}

TEST(LrSchedule, WarmupLRLogStartsAtTheMinimumTwice) {
  Schedule S = make("WarmupLR", {"warmup_min_lr=0", "warmup_max_lr=0.001",
                                 "warmup_num_steps=1000"});
  EXPECT_EQ(lrAt(S, 1), 0.0); // The constructor's rate.
  EXPECT_EQ(lrAt(S, 2), 0.0); // log(1) = 0.
  EXPECT_NEAR(lrAt(S, 3), 1e-3 * std::log(2.0) / std::log(1000.0), 1e-15);
  EXPECT_EQ(lrAt(S, 1002), 1e-3);
  EXPECT_EQ(lrAt(S, 5000), 1e-3);
}

TEST(LrSchedule, WarmupLRMaxDefaultsToTheOptimizerRate) {
  Schedule S = make("WarmupLR", {"warmup_num_steps=10", "warmup_type=linear"});
  EXPECT_NEAR(lrAt(S, 7, 5e-4), 5e-4 * 5 / 10, 1e-15);
  EXPECT_EQ(lrAt(S, 12, 5e-4), 5e-4);
}

TEST(LrSchedule, WarmupDecayLRDecaysLinearlyToZero) {
  Schedule S = make("WarmupDecayLR",
                    {"total_num_steps=2000", "warmup_num_steps=1000"});
  // warmup_max_lr defaults to 0.001 here, not to the optimizer's rate.
  EXPECT_EQ(lrAt(S, 1002, 5.0), 1e-3);
  EXPECT_NEAR(lrAt(S, 1500), 1e-3 * 502 / 1000, 1e-15);
  EXPECT_EQ(lrAt(S, 2002), 0.0);
  EXPECT_EQ(lrAt(S, 3000), 0.0);
}

TEST(LrSchedule, WarmupCosineLRIsARatioOfTheRate) {
  Schedule S = make("WarmupCosineLR",
                    {"total_num_steps=100", "warmup_num_steps=10",
                     "warmup_type=linear"});
  EXPECT_EQ(lrAt(S, 1), 0.0);
  EXPECT_NEAR(lrAt(S, 7), 1e-3 * 0.5, 1e-15);
  double Ratio = 1e-4 + (1 - 1e-4) * (1 + std::cos(M_PI / 90)) / 2;
  EXPECT_NEAR(lrAt(S, 12), 1e-3 * Ratio, 1e-15);
  EXPECT_NEAR(lrAt(S, 500), 1e-3 * 1e-4, 1e-15); // Held at cos_min_ratio.
}

TEST(LrSchedule, LRRangeTestGrowsContinuouslyOrInStairs) {
  Schedule S = make("LRRangeTest", {"lr_range_test_min_lr=0.001",
                                    "lr_range_test_step_size=10"});
  EXPECT_EQ(lrAt(S, 1), 1e-3);
  EXPECT_NEAR(lrAt(S, 12), 1e-3 * 2.1, 1e-15);
  Schedule Stairs = make("LRRangeTest", {"lr_range_test_step_size=10",
                                         "lr_range_test_staircase=true"});
  EXPECT_NEAR(lrAt(Stairs, 12), 1e-3 * 2, 1e-15);
}

TEST(LrSchedule, OneCycleCyclesRateAndMomentum) {
  Schedule S = make("OneCycle", {"cycle_min_lr=0.0001", "cycle_max_lr=0.001",
                                 "cycle_first_step_size=4"});
  Hyper First = S.at(1, 1, 0.9, 0.999);
  EXPECT_EQ(First.Lr, 1e-4);
  EXPECT_EQ(First.Beta1, 0.8);
  EXPECT_EQ(First.Beta2, 0.99); // OneCycle replaces beta2.
  Hyper Up = S.at(2, 1, 0.9, 0.999); // A quarter of the way up.
  EXPECT_NEAR(Up.Lr, 1e-4 + 9e-4 * 0.25, 1e-15);
  EXPECT_NEAR(Up.Beta1, 0.9 - 0.1 * 0.25, 1e-15);
  EXPECT_NEAR(lrAt(S, 6), 1e-4 + 9e-4 * 0.75, 1e-15); // Coming down.
  Hyper After = S.at(10, 1, 0.9, 0.999);          // No decay configured.
  EXPECT_EQ(After.Lr, 1e-4);
  EXPECT_EQ(After.Beta1, 0.9);
}

TEST(LrSchedule, WhatDeepSpeedRefuses) {
  Schedule S;
  EXPECT_NE(S.parse("WarmupDecayLR", {"warmup_num_steps=10"}).find(
                "total_num_steps"),
            std::string::npos);
  EXPECT_NE(S.parse("WarmupLR", {"warmup_num_steps=0"}).find("positive"),
            std::string::npos);
  EXPECT_NE(S.parse("OneCycle", {"cycle_min_lr=0.1"}).find("cycle_max_lr"),
            std::string::npos);
  EXPECT_NE(S.parse("StepLR", {}).find("not one of DeepSpeed's"),
            std::string::npos);
  EXPECT_NE(S.parse("WarmupLR", {"warmup_num_steps"}).find("name=value"),
            std::string::npos);
}
