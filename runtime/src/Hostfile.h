//===- Hostfile.h - DeepSpeed's hostfile and its filters -------*- C++ -*-===//
//
// The hostfile the `deepspeed` launcher reads (OpenMPI/Horovod style):
//
//   # comment
//   worker-1 slots=4
//   worker-2 slots=4
//
// and the filters its command line puts on it: --num-nodes N (the first N
// hosts), --num-gpus G (GPUs 0..G-1 of each), --include/--exclude
// "NAME[:SLOT[,SLOT...]][@NAME...]" (a host named with slots and bare
// takes the slots, as DeepSpeed's parser). DeepSpeed refuses a host
// listed twice, a line it cannot read and an include of a host or slot
// the file lacks, and so does dsrun; where DeepSpeed makes do (a word
// after the slot count, slots=0, --num-nodes or --num-gpus beyond the
// file), dsrun refuses by name too: a launch must be the one asked for.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_HOSTFILE_H
#define DSRUN_HOSTFILE_H

#include <optional>
#include <string>
#include <vector>

namespace dsrun {

/// One line of a hostfile.
struct HostEntry {
  std::string Host;
  int Slots = 0;
  int Line = 0;
};

/// The hosts of a hostfile in its order; nullopt with Error naming
/// Path:line for a line that is not "HOST slots=N", a host listed twice,
/// zero slots, or a file without hosts.
std::optional<std::vector<HostEntry>>
parseHostfile(const std::string &Text, const std::string &Path,
              std::string &Error);

/// What the command line selects from the hostfile (-1: not given).
struct HostFilter {
  std::string Include, Exclude;
  int NumNodes = -1, NumGpus = -1;
};

/// A node of the launch: its host and the GPUs (CUDA device numbers) its
/// ranks use, one rank per GPU.
struct LaunchNode {
  std::string Host;
  std::vector<int> Gpus;
};

/// The nodes a filter selects, in the hostfile's order; nullopt with Error
/// for a filter DeepSpeed refuses (include with exclude, --num-nodes or
/// --num-gpus with either, an unknown host or slot) and for a selection
/// that is empty or asks for more than the file has.
std::optional<std::vector<LaunchNode>>
selectNodes(const std::vector<HostEntry> &Hosts, const HostFilter &Filter,
            std::string &Error);

/// Whether the nodes are what the plan was made for: Nodes nodes of
/// GpusPerNode GPUs each. Error says what each side has.
bool matchesPlan(const std::vector<LaunchNode> &Nodes, unsigned PlanNodes,
                 unsigned PlanGpusPerNode, std::string &Error);

/// "0-3", "0,2", "2-3,6": a GPU list for messages.
std::string gpuList(const std::vector<int> &Gpus);

} // namespace dsrun

#endif
