//===- LaunchTests.cpp - Launch tests ---------------------------------------===//
//
// The launcher environments and the rendezvous between processes.
//
//===----------------------------------------------------------------------===//

#include "HostTests.h"

#include "Calibration.h"
#include "Checkpoint.h"
#include "Collectives.h"
#include "Exposed.h"
#include "FastDivmod.h"
#include "HostMath.h"
#include "Launch.h"
#include "Arena.h"
#include "LossScaler.h"
#include "dsc/KernelTime.h"
#include "dsc/PlanCheck.h"
#include "dsc/PlanCodec.h"
#include "Nvme.h"
#include "TokenData.h"
#include "Trace.h"
#include "Weights.h"
#include "dsc/PlanFacts.h"
#include "dsc/SafeTensors.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace dsrun;
namespace plan = dsc::plan;

TEST(Launch, Launchers) {
  std::string Error;
  for (const char *V : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                        "MASTER_PORT", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID",
                        "SLURM_NTASKS", "PMI_RANK", "PMI_SIZE", "DSRUN_CHILD",
                        "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                        "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"})
    unsetenv(V);
  EXPECT(processFromEnvironment(Error)->Launcher == "single");
  // An MPICH-style job: the rendezvous goes through MPI when dsrun has it,
  // else it needs MASTER_ADDR and says how to do without.
  setenv("PMI_RANK", "1", 1);
  setenv("PMI_SIZE", "2", 1);
  std::optional<ProcessInfo> Mpi = processFromEnvironment(Error);
  if (builtWithMpi()) {
    EXPECT(Mpi && Mpi->Launcher == "mpi" && Mpi->Mpi && Mpi->Rank == 1);
  } else {
    EXPECT(!Mpi);
    EXPECT(Error.find("built with MPI") != std::string::npos);
  }
  unsetenv("PMI_RANK");
  unsetenv("PMI_SIZE");
  setenv("SLURM_PROCID", "3", 1);
  setenv("SLURM_NTASKS", "4", 1);
  EXPECT(!processFromEnvironment(Error));
  EXPECT(Error.find("MASTER_ADDR") != std::string::npos);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29777", 1);
  std::optional<ProcessInfo> I = processFromEnvironment(Error);
  EXPECT(I && I->Rank == 3 && I->WorldSize == 4 && I->Launcher == "slurm");
  EXPECT(I && I->LocalSize == 0); // Unsaid: dsrun guesses from the GPUs.
  // The processes on this node share its cores (--host-threads' default).
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  I = processFromEnvironment(Error);
  EXPECT(I && I->LocalSize == 2);
  // A variable that is set but is no count is a problem, which dsrun
  // reports where it needs the count (--host-threads' default), not a
  // guess.
  setenv("LOCAL_WORLD_SIZE", "two", 1);
  I = processFromEnvironment(Error);
  EXPECT(I && I->LocalSize == 0 &&
         I->LocalSizeProblem.find("LOCAL_WORLD_SIZE is 'two', not a count") !=
             std::string::npos &&
         I->LocalSizeProblem.find("--host-threads") != std::string::npos);
  setenv("LOCAL_WORLD_SIZE", "0", 1);
  I = processFromEnvironment(Error);
  EXPECT(I && !I->LocalSizeProblem.empty());
  unsetenv("LOCAL_WORLD_SIZE");
  setenv("SLURM_NTASKS_PER_NODE", "4", 1);
  I = processFromEnvironment(Error);
  EXPECT(I && I->LocalSize == 4 && I->LocalSizeProblem.empty());
  unsetenv("SLURM_NTASKS_PER_NODE");
  setenv("SLURM_PROCID", "4", 1);
  EXPECT(!processFromEnvironment(Error));
  unsetenv("SLURM_PROCID");
  unsetenv("SLURM_NTASKS");

  // Rank 0 hands a blob to three other processes over TCP.
  int Port = 20000 + int(getpid() % 20000);
  auto Process = [](int Rank, int World, int ToPort) {
    ProcessInfo P;
    P.Rank = P.LocalRank = Rank;
    P.WorldSize = World;
    P.MasterPort = ToPort;
    P.Launcher = "test";
    return P;
  };
  std::vector<pid_t> Children;
  for (int R = 1; R < 4; ++R) {
    pid_t Pid = fork();
    if (Pid == 0) {
      ProcessInfo Me = Process(R, 4, Port);
      std::string Blob, E;
      bool OK = exchangeBlob(Me, Blob, 20, E) && Blob == "nccl-id-123";
      _exit(OK ? 0 : 1);
    }
    Children.push_back(Pid);
  }
  ProcessInfo Root = Process(0, 4, Port);
  std::string Blob = "nccl-id-123";
  EXPECT(exchangeBlob(Root, Blob, 20, Error));
  for (pid_t Pid : Children) {
    int Status = 0;
    waitpid(Pid, &Status, 0);
    EXPECT(WIFEXITED(Status) && WEXITSTATUS(Status) == 0);
  }
  // Nobody listening: a bounded wait and a message, not a hang.
  ProcessInfo Lonely = Process(1, 2, Port + 1);
  std::string Nothing;
  EXPECT(!exchangeBlob(Lonely, Nothing, 1, Error));
  EXPECT(Error.find("could not reach rank 0") != std::string::npos);
}

/// Run by mpiexec: each rank learns who it is from MPI's environment alone
/// (no MASTER_ADDR) and receives rank 0's id by MPI.
int dsrun::mpiRendezvous() {
  std::string Error;
  std::optional<ProcessInfo> Me = processFromEnvironment(Error);
  if (!Me || !Me->Mpi || Me->WorldSize < 2) {
    fprintf(stderr, "mpi rendezvous: not an MPI job of several ranks: %s\n",
            Error.c_str());
    return 1;
  }
  std::string Blob = Me->Rank == 0 ? std::string("nccl-id-\0-456", 14) : "";
  if (!exchangeBlob(*Me, Blob, 20, Error)) {
    fprintf(stderr, "mpi rendezvous: rank %d: %s\n", Me->Rank, Error.c_str());
    return 1;
  }
  bool OK = Blob == std::string("nccl-id-\0-456", 14);
  printf("mpi rendezvous: rank %d of %d: %s\n", Me->Rank, Me->WorldSize,
         OK ? "passed" : "FAILED");
  return leaveJob(OK ? 0 : 1);
}
