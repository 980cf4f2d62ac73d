//===- Launch.h - Processes, ranks and the NCCL rendezvous ------*- C++ -*-===//
//
// dsrun runs one process per GPU. Started with -n N it forks N children on
// this node itself; started by another launcher it joins that job:
//   torchrun-style  RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT
//   Slurm (srun)    SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID
//   Open MPI        OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE,
//                   OMPI_COMM_WORLD_LOCAL_RANK
//   MPICH, Intel    PMI_RANK, PMI_SIZE, MPI_LOCALRANKID
// Rank 0 hands the NCCL unique id to every other rank. In an MPI job, when
// dsrun was built with MPI (cmake finds it), that is one MPI_Bcast; under
// torchrun, whose agent already serves a TCPStore at MASTER_PORT, rank 0
// sets it in that store and the others get it (TcpStore.h); otherwise
// rank 0 listens at MASTER_ADDR:MASTER_PORT and the others fetch it over
// TCP, so Slurm and MPI jobs without MPI in dsrun need those two
// variables.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_LAUNCH_H
#define DSRUN_LAUNCH_H

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dsrun {

struct ProcessInfo {
  int Rank = 0, WorldSize = 1, LocalRank = 0;
  std::string MasterAddr = "127.0.0.1";
  int MasterPort = 29500;
  std::string Launcher; ///< "dsrun", "torchrun", "slurm", "mpi", "single".
  /// The NCCL id travels by MPI_Bcast (an MPI job, dsrun built with MPI).
  bool Mpi = false;
  /// torchrun's agent serves a TCPStore at MASTER_ADDR:MASTER_PORT
  /// (TORCHELASTIC_USE_AGENT_STORE): the NCCL id travels through it, under
  /// StoreKey.
  bool AgentStore = false;
  std::string StoreKey;
  /// Processes of the job on this node, where the launcher says (0: not
  /// said). Only --host-threads' default depends on it, so a launcher
  /// variable that is not a count is kept here as a problem, an error
  /// only where that default is needed.
  int LocalSize = 0;
  std::string LocalSizeProblem;
};

/// Whether this build can use MPI for the rendezvous.
bool builtWithMpi();

/// Leaves an MPI job that the rendezvous joined: MPI_Finalize after
/// success, MPI_Abort (the whole job) after a failure. Returns Status.
int leaveJob(int Status);

/// The rank of this process from the launcher's environment; a single
/// process when there is none. Error says what is missing.
std::optional<ProcessInfo> processFromEnvironment(std::string &Error);

/// Forks a process that runs Argv (Program, or Argv[0] looked up on PATH
/// when Program is null) with Env added to this environment and Stdin,
/// when not -1, as its stdin. It gets a process group of its own, so that
/// a terminal's Ctrl-C or a kill of the launcher's group reaches it once,
/// through the launcher, and is killed should the launcher be. Returns
/// its pid, or -1 with the reason printed.
int startChild(const std::vector<std::string> &Argv,
               const std::vector<std::pair<std::string, std::string>> &Env,
               int Stdin = -1, const char *Program = nullptr);

/// Where dsrun -n's processes sit in a job of several nodes (dsrun -n G
/// --nodes N --node-rank I, as the hostfile launcher starts each node):
/// ranks I*G .. I*G+G-1 of N*G, rank 0 at MasterAddr.
struct NodePlace {
  int Nodes = 1, NodeRank = 0;
  std::string MasterAddr = "127.0.0.1";
  int MasterPort = 29500;
};

/// Starts N copies of this program (argv, without -n) on this node with
/// the environment of a torchrun-style job, waits for them, and when one
/// fails kills the others; passes SIGTERM and SIGINT on to them
/// (Preemption.h). Started by the hostfile launcher (DSRUN_NODE_CONTROL),
/// it also reads its stdin: a 'T' is a SIGTERM, its end kills the ranks
/// (NodeLaunch.h). Returns the first status other than 0.
int launchLocal(int N, const std::vector<std::string> &Argv,
                const NodePlace &Place);

/// Rank 0 sends Blob to every other rank; the others receive it.
/// Gives up after TimeoutSeconds with Error set.
bool exchangeBlob(const ProcessInfo &Info, std::string &Blob,
                  int TimeoutSeconds, std::string &Error);

} // namespace dsrun

#endif
