//===- HostTestMain.cpp - dsrunHostTests' modes ---------------------------===//

#include "HostTests.h"

#include <cstdio>

namespace dsrun {
std::vector<std::string> PlanPaths;
}

using namespace dsrun;

TEST(RuntimePlans, EveryPlanGiven) {
  for (const std::string &Path : PlanPaths)
    planChecks(Path.c_str());
}

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc == 2 && std::string(argv[1]) == "--mpi-rendezvous")
    return mpiRendezvous();
  if (argc == 3 && std::string(argv[1]) == "--write-calibration") {
    std::string Error;
    if (writeCalibration(argv[2], sampleCalibration(), Error))
      return 0;
    fprintf(stderr, "%s\n", Error.c_str());
    return 1;
  }
  for (int I = 1; I < argc; ++I)
    PlanPaths.push_back(argv[I]);
  return RUN_ALL_TESTS();
}
