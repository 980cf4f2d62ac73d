//===- NodeLaunch.h - Starting a job on the nodes of a hostfile -*- C++ -*-===//
//
//   dsrun --hostfile FILE [--num-nodes N] [--num-gpus G]
//         [--include SPEC | --exclude SPEC] [--launcher auto|ssh|mpirun]
//         [--master-addr A] [--master-port P] [--ssh-port P] [--show-launch]
//         plan.bin ...
//
// reads DeepSpeed's hostfile (Hostfile.h), checks the nodes it selects
// against the plan's nodes x GPUs, and starts every rank:
//   ssh     one node agent per node, `dsrun -n G --nodes N --node-rank I`,
//           through ssh (the same dsrun path and working directory there,
//           as DeepSpeed's pdsh launcher assumes), or forked directly for
//           a node that is this machine; each agent's CUDA_VISIBLE_DEVICES
//           is its node's GPU list;
//   mpirun  one `mpirun -n W --host h1:G,h2:G,...`; every rank joins as an
//           MPI job. It cannot give nodes different GPU lists.
//   auto    Open MPI's mpirun where it is on PATH and nothing differs per
//           node, else ssh; a job whose nodes are all this machine is
//           forked here.
// NCCL_*, UCX_ and DSRUN_ variables, and the lines of .deepspeed_env in
// the home and working directories (DS_ENV_FILE renames it), go to every
// node. Two hostfile entries that are both this machine are run as two
// nodes: NCCL is given a host id per node (NCCL_HOSTID), so that traffic
// between them takes the network transport, as between real nodes.
//
// The launcher talks to each agent through a pipe on the agent's stdin
// (over ssh, the connection's): a byte 'T' passes a SIGTERM or SIGINT on,
// and the end of the pipe, when the launcher ends or a node has failed,
// kills the agent's ranks. A node that fails stops every other node.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_NODELAUNCH_H
#define DSRUN_NODELAUNCH_H

#include "Hostfile.h"
#include "Launch.h"

#include <string>
#include <vector>

namespace dsrun {

struct NodeLaunchOptions {
  std::string Hostfile;
  HostFilter Filter;
  std::string Launcher = "auto";
  std::string MasterAddr; ///< Empty: the first node's host.
  int MasterPort = 29500;
  int SshPort = 0; ///< 0: ssh's default.
  /// Print the nodes and the commands that would start them; start
  /// nothing.
  bool Show = false;
};

/// How this dsrun was asked to start ranks: the launch flags, which are
/// this process's and not passed on to the ranks.
struct LaunchRequest {
  int Processes = 0; ///< -n: fork this many ranks here.
  NodePlace Place;   ///< -n's place in a job of --nodes nodes.
  NodeLaunchOptions Hostfile; ///< --hostfile and its filters.
};

/// Takes the launch flags out of Args (dsrun's argv): -n, --nodes,
/// --node-rank, --hostfile and its options. False with Error for a bad
/// value or a flag without the one it needs. -n's ranks find rank 0 at
/// 127.0.0.1 and MASTER_PORT (a random port when unset); with --nodes,
/// at MASTER_ADDR (needed) and MASTER_PORT (29500 when unset).
bool takeLaunchFlags(std::vector<std::string> &Args, LaunchRequest &Request,
                     std::string &Error);

/// Starts the plan's ranks on the hostfile's nodes and waits for them.
/// Args is dsrun's command line without the launch flags (argv[0] first).
/// PlanNodes 0 (a tool run without a plan): nodes of any equal size.
/// Returns 2 for a bad hostfile or flag, 1 when the nodes are not the
/// plan's, else the first failing node's status (0 when all succeed).
int launchNodes(const NodeLaunchOptions &Options, unsigned PlanNodes,
                unsigned PlanGpusPerNode, const std::vector<std::string> &Args);

/// Whether Host names this machine: a loopback name or address, this
/// machine's host name, or a name that resolves to one of its addresses.
bool isThisMachine(const std::string &Host);

/// Single-quoted for a POSIX shell.
std::string shellQuote(const std::string &Word);

} // namespace dsrun

#endif
