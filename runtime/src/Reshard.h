//===- Reshard.h - A checkpoint moved to another plan's layout --*- C++ -*-===//
//
// A shard holds one rank's state in its plan's layout (StateLayout.h), so
// --resume needs the plan that wrote it. To go on at another world size,
// ZeRO stage or offload, reshardCheckpoint rebuilds every rank's shard of
// the new plan, each stretch of state read from whichever old shard holds
// the same tensor's same elements. The values are moved, never computed:
// the new run starts from the old run's parameters, master weights,
// moments, step, scheduler position and loss scale exactly (what
// DeepSpeed's universal checkpoints do, offline as ds_to_universal.py is).
//
// Host-only, tested in CI.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_RESHARD_H
#define DSRUN_RESHARD_H

#include "dsc/PlanFormat.h"

#include <string>

namespace dsrun {

/// Summary of a conversion, for the tool to print.
struct ReshardReport {
  uint32_t Step = 0;
  uint64_t BytesRead = 0, BytesWritten = 0;
};

/// Converts the checkpoint directory FromDir (shards of plan From) into
/// one for plan To in ToDir: To's shards, To as plan.bin, and the
/// consolidated weights and config.json copied. Both plans must be of the
/// same model with the same parameter type. False with Error on anything
/// that does not fit; ToDir's files are written atomically, each alone.
bool reshardCheckpoint(const std::string &FromDir,
                       const dsc::plan::Plan &From,
                       const dsc::plan::Plan &To, const std::string &ToDir,
                       ReshardReport &Report, std::string &Error);

/// Writes the checkpoint's fp32 master weights, every tensor whole
/// (DeepSpeed's zero_to_fp32.py does this for its checkpoints): one
/// safetensors file where Path ends in .safetensors, else a model folder
/// in save_pretrained's layout (shards of at most MaxShardBytes, the
/// index, the checkpoint's config.json). Under the names of the
/// checkpoint's weights where it has them (the --init file's), else the
/// plan's. A tensor with no master weights (frozen) is written from its
/// parameters.
bool writeFp32Weights(const std::string &Dir, const dsc::plan::Plan &From,
                      const std::string &Path, uint64_t MaxShardBytes,
                      ReshardReport &Report, std::string &Error);

/// Checks a checkpoint without a GPU: every rank's shard of From is there,
/// written by From at one step, and every byte of the shards and of
/// model.safetensors matches its checksum.
/// Report counts the bytes read.
bool checkCheckpoint(const std::string &Dir, const dsc::plan::Plan &From,
                     ReshardReport &Report, std::string &Error);

} // namespace dsrun

#endif
