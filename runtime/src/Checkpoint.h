//===- Checkpoint.h - Training checkpoints: format and files ----*- C++ -*-===//
//
// dsrun --save DIR writes, after step N, the directory DIR/global_stepN:
//   rank<R>.ckpt        each rank's shard: a header (what plan wrote it,
//                       the step, the optimizer's step, the seed, the loss
//                       scaler) and the bytes of every buffer that carries
//                       training state from step to step (the 16-bit
//                       parameters, fp32 master weights and optimizer
//                       moments, wherever the plan keeps them);
//   model.safetensors   the consolidated 16-bit weights under the names
//                       of --init's file (what transformers loads);
//   config.json         copied from beside --init's file, if it has one;
// and then DIR/latest, naming global_stepN. Every file is written to a
// temporary name, synced and renamed, and latest only after every rank's
// shard is in place: a crash at any moment leaves the previous checkpoint
// whole and latest naming it. The data position and dropout's random
// numbers need no state: both are functions of the seed and the step.
//
// This part is host-only (tested without a GPU); the executor moves the
// buffers (Checkpointing.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_CHECKPOINT_H
#define DSRUN_CHECKPOINT_H

#include "LossScaler.h"

#include "dsc/PlanFormat.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dsrun {

/// A file written under a temporary name and renamed into place by
/// commit(); destroyed uncommitted, it removes the temporary file.
class AtomicFile {
public:
  AtomicFile() = default;
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;
  ~AtomicFile();
  /// Bytes, when known, is the file's size: its blocks are reserved at
  /// once, so a full file system is an error before anything is written,
  /// naming the bytes needed and free.
  bool open(const std::string &Path, std::string &Error, uint64_t Bytes = 0);
  bool write(const void *Data, uint64_t Bytes, std::string &Error);
  /// Syncs, closes and renames; then syncs the directory, so the rename
  /// itself survives a crash.
  bool commit(std::string &Error);

private:
  int Fd = -1;
  std::string Path, Temporary;
  uint64_t Expected = 0, Written = 0;
};

/// Writes Bytes to Path through a synced temporary file and a rename.
bool writeFileAtomically(const std::string &Path, const std::string &Bytes,
                         std::string &Error);

/// Copies From to To through an atomic file, if From exists (true, and
/// nothing done, if it does not); Bytes counts what was copied.
bool copyIfPresent(const std::string &From, const std::string &To,
                   uint64_t &Bytes, std::string &Error);

/// What a shard says about the run that wrote it.
struct CheckpointHeader {
  uint64_t ModelHash = 0, ConfigHash = 0;
  uint32_t WorldSize = 0, Rank = 0, ZeroStage = 0;
  uint32_t ParamType = 0; ///< plan::DType of the parameters.
  /// The last step finished, and the optimizer's next step number (the
  /// steps applied, plus one: fp16 skips some).
  uint32_t Step = 0, OptimizerStep = 1;
  uint64_t Seed = 0;
  LossScaler::State Scaler;
};

/// One buffer of a shard: its name, its bytes.
struct CheckpointPart {
  std::string Name;
  uint64_t Bytes = 0;
};

/// The buffers that carry training state across steps, in the order a
/// shard holds them (those the plan has), each part named by its role.
const std::vector<dsc::plan::BufferRole> &stateRoles();

/// Bytes a shard's parts move through at once (64 MiB). Tests make it
/// small and odd, so that stretches of state straddle the chunks.
void setCheckpointChunkBytes(uint64_t Bytes);

/// Writes a shard: the header, then each part's bytes, which Fill provides
/// chunk by chunk (Fill(Part, Offset, Bytes, Out)); atomically.
bool writeShard(const std::string &Path, const CheckpointHeader &H,
                const std::vector<CheckpointPart> &Parts,
                const std::function<bool(size_t, uint64_t, uint64_t, char *)> &Fill,
                std::string &Error);

/// A shard opened for reading: its header and parts; read() hands each
/// part's bytes to Take chunk by chunk, in order, and checks each block
/// against its checksum, the blocks a chunk completes before it is handed
/// on (with 64 MiB chunks, every block of it).
class ShardReader {
public:
  ~ShardReader();
  bool open(const std::string &Path, std::string &Error);
  const CheckpointHeader &header() const { return H; }
  const std::vector<CheckpointPart> &parts() const { return Parts; }
  const std::string &path() const { return Path; }
  bool read(const std::function<bool(size_t, uint64_t, uint64_t, const char *)>
                &Take,
            std::string &Error);
  /// Bytes of part Part from byte Offset on, into Out, unchecked: call
  /// verify() first.
  bool readAt(size_t Part, uint64_t Offset, uint64_t Bytes, char *Out,
              std::string &Error);
  /// Reads every part and checks it against its block checksums (read()
  /// checks as it goes); the first damaged block is named in Error.
  bool verify(std::string &Error);

private:
  FILE *File = nullptr;
  std::string Path;
  CheckpointHeader H;
  std::vector<CheckpointPart> Parts;
  uint64_t DataBegin = 0;
  /// The CRC-32C of every block, part after part, as the shard holds them.
  std::vector<uint32_t> Sums;
  uint64_t firstBlock(size_t Part) const;
  std::string damaged(size_t Part, uint64_t Block) const;
};

/// The checkpoint directory --resume DIR means: DIR/<what DIR/latest
/// names>, or DIR itself when it holds shards. "" and Error if neither.
std::string checkpointToResume(const std::string &Dir, std::string &Error);

/// mkdir -p.
bool makeDirectories(const std::string &Path, std::string &Error);

/// After a save that failed: removes SaveDir/global_stepN and whatever of
/// it was written, unless latest names it. Says what it removed ("" for
/// nothing).
std::string discardCheckpoint(const std::string &SaveDir, uint32_t Step);

/// The plan that wrote a checkpoint, saved beside its shards (what
/// dsrun-reshard reads their layout from).
std::string checkpointPlanPath(const std::string &Dir);
bool writeCheckpointPlan(const std::string &Dir, const dsc::plan::Plan &P,
                         std::string &Error);

/// The name of step N's directory inside --save's.
std::string checkpointName(uint32_t Step);

/// Whether a shard can continue this plan's run on this rank: "" or what
/// differs (model, world size, stage, parameter type, a buffer's size).
/// Parts lists the buffers this rank's plan holds, with their sizes.
std::string checkShardAgainstPlan(const CheckpointHeader &H,
                                  const std::vector<CheckpointPart> &Have,
                                  const dsc::plan::Plan &P, uint32_t Rank,
                                  const std::vector<CheckpointPart> &Parts);

} // namespace dsrun

#endif
