//===- HostTests.h - What dsrun's host tests share --------------*- C++ -*-===//
//
// dsrunHostTests: GoogleTest suites of what dsrun does without a GPU, one
// file per component (HostMath, Measure, Files, Launch, RuntimePlans), and
// two modes of its own for other tests (HostTestMain.cpp):
//
//   dsrunHostTests [plan.bin...]            the suites; RuntimePlans checks
//                                           every plan given
//   dsrunHostTests --write-calibration F    the sample calibration file,
//                                           which a lit test reads back
//   dsrunHostTests --mpi-rendezvous         one rank of runtime-mpi
//
// Built where GoogleTest is (the whole tree, CI); a runtime-only build on
// a GPU machine has none and leaves them out.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_TEST_HOSTTESTS_H
#define DSRUN_TEST_HOSTTESTS_H

#include "Calibration.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

/// The checks read as conditions; a failed one names its expression. In a
/// do-while, so that one under an if without braces leaves no dangling
/// else (gtest's macros end in one).
#define EXPECT(Cond)                                                           \
  do {                                                                         \
    EXPECT_TRUE(Cond) << #Cond;                                                \
  } while (0)

namespace dsrun {

/// The plans RuntimePlans checks, from the command line.
extern std::vector<std::string> PlanPaths;
/// The calibration --write-calibration writes and calibrationFile reads.
Calibration sampleCalibration();
/// Run by mpiexec: each rank learns who it is from MPI's environment alone
/// and receives rank 0's id by MPI; the process's exit status.
int mpiRendezvous();
/// The checks of one plan file, for every rank.
void planChecks(const char *Path);

} // namespace dsrun

#endif
