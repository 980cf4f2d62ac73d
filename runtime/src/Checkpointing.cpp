//===- Checkpointing.cpp - --save and --resume ----------------------------===//
//
// The executor's side of Checkpoint.h: which of the plan's buffers hold
// this rank's training state, moving them between the arenas and a shard,
// and agreeing among ranks that a checkpoint is whole before latest names
// it.
//
//===----------------------------------------------------------------------===//

#include "Executor.h"

#include "Checkpoint.h"
#include "Preemption.h"
#include "Reshard.h"
#include "StateLayout.h"

#include <cstring>
#include <filesystem>

namespace plan = dsc::plan;

namespace dsrun {

std::vector<StatePart> Executor::stateParts() const {
  // What the shard holds comes from the plan alone (StateLayout.h); here
  // each part gets where it is in this process.
  std::vector<StatePart> Parts;
  for (const StatePartPlace &S : dsrun::stateParts(P, Process.Rank))
    Parts.push_back(
        {S.Name, S.Bytes,
         S.Where == StatePartPlace::Arena ? Buffers.bufferBase(S.Buffer) : nullptr,
         S.Where == StatePartPlace::OptimizerSwap ? OptimizerSwap.get()
         : S.Where == StatePartPlace::ParamSwap   ? ParamSwap.get()
                                                  : nullptr});
  return Parts;
}

/// Moves N bytes at At of a state part to or from Buffer.
static bool moveState(const StatePart &S, uint64_t At, uint64_t N,
                      char *Buffer, bool Save, std::string &Error) {
  if (At + N > S.Bytes) {
    Error = S.Name + " holds " + std::to_string(S.Bytes) + " bytes, not " +
            std::to_string(At + N);
    return false;
  }
  if (S.File)
    return Save ? S.File->read(Buffer, At, N, Error)
                : S.File->write(Buffer, At, N, Error);
  // Either arena: cudaMemcpyDefault tells host from device addresses.
  CHECK_CUDA(Save ? cudaMemcpy(Buffer, S.Memory + At, N, cudaMemcpyDefault)
                  : cudaMemcpy(S.Memory + At, Buffer, N, cudaMemcpyDefault));
  return true;
}

bool Executor::openResume() {
  if (Options.ResumeDir.empty())
    return true;
  std::string Error;
  std::string Dir = checkpointToResume(Options.ResumeDir, Error);
  // Kept open until the restore reads it: what is read is what was checked
  // (a checkpoint written over replaces the file, not this one's bytes).
  auto Shard = std::make_unique<ShardReader>();
  std::string Path = Dir + "/rank" + std::to_string(Process.Rank) + ".ckpt";
  if (Dir.empty() || !Shard->open(Path, Error)) {
    fprintf(stderr, "dsrun: rank %d: --resume: %s\n", Process.Rank,
            Error.c_str());
    return false;
  }
  const CheckpointHeader &H = Shard->header();
  std::string Why = checkShardAgainstPlan(H, Shard->parts(), P, Process.Rank,
                                          checkpointParts(stateParts()));
  if (!Why.empty()) {
    fprintf(stderr, "dsrun: rank %d: --resume %s: %s\n", Process.Rank,
            Dir.c_str(), Why.c_str());
    return false;
  }
  if (Options.SeedGiven && H.Seed != Options.Seed) {
    fprintf(stderr, "dsrun: --resume %s: the run was seeded with %llu and "
                    "--seed gives %llu; the data order and dropout follow the "
                    "seed, so resume with --seed %llu (or without --seed)\n",
            Dir.c_str(), (unsigned long long)H.Seed,
            (unsigned long long)Options.Seed, (unsigned long long)H.Seed);
    return false;
  }
  uint32_t Total = Options.Steps + Options.LeanSteps;
  if (H.Step >= Total) {
    if (Process.Rank == 0)
      fprintf(stderr, "dsrun: --resume %s: the checkpoint is at step %u and "
                      "--steps %u counts every step from the first: give a "
                      "larger --steps\n",
              Dir.c_str(), H.Step, Total);
    return false;
  }
  if (H.ConfigHash != P.Settings.ConfigHash && Process.Rank == 0)
    fprintf(stderr, "dsrun: note: the config changed since %s was written; "
                    "the run goes on from it, but not as the first run "
                    "would have\n",
            Dir.c_str());
  Options.Seed = H.Seed;
  ResumeShard = std::move(Shard);
  return true;
}

void Executor::restoreCheckpoint() {
  if (!ResumeShard)
    return;
  CHECK_CUDA(cudaDeviceSynchronize());
  std::vector<StatePart> State = stateParts();
  std::string Error;
  bool Ok = ResumeShard->read(
      [&](size_t I, uint64_t At, uint64_t N, const char *From) {
        return I < State.size() &&
               moveState(State[I], At, N, const_cast<char *>(From),
                         /*Save=*/false, Error);
      },
      Error);
  if (!Ok)
    fatalError("rank " + std::to_string(Process.Rank) + ": --resume: " + Error);
  CHECK_CUDA(cudaDeviceSynchronize());
  // Every rank must go on from the same step (each read its own shard).
  const CheckpointHeader &H = ResumeShard->header();
  if (!allRanksAgree(true, H.Step) || !allRanksAgree(true, H.OptimizerStep))
    fatalError("rank " + std::to_string(Process.Rank) + ": --resume: the "
               "ranks' shards are of different steps (a checkpoint written "
               "over, or a 'latest' that differs between nodes)");
  OptimizerStep = H.OptimizerStep;
  Scaler.restore(H.Scaler);
  if (Process.Rank == 0)
    fprintf(stderr, "dsrun: resumed from %s after step %u\n",
            ResumeShard->path().c_str(), H.Step);
}

uint32_t Executor::reduceOverRanks(uint32_t Mine, ncclRedOp_t Op,
                                   const char *What) {
  if (P.Settings.WorldSize == 1)
    return Mine;
  // The first loss slot is free between steps (read by now), and its host
  // side is pinned, so the copies keep stream order. Later slots are not
  // free: the norm's partial sums after them must stay zero.
  cudaStream_t S = Timing.stream(plan::Stream::Compute);
  memcpy(HostLosses, &Mine, sizeof(Mine));
  CHECK_CUDA(cudaMemcpyAsync(DeviceLosses, HostLosses, sizeof(Mine),
                             cudaMemcpyHostToDevice, S));
  CHECK_NCCL(
      ncclAllReduce(DeviceLosses, DeviceLosses, 1, ncclUint32, Op, Comm, S));
  CHECK_CUDA(cudaMemcpyAsync(HostLosses, DeviceLosses, sizeof(Mine),
                             cudaMemcpyDeviceToHost, S));
  // Bounded, as a step is: a rank that is gone must not hang this.
  waitUntil([S] { return cudaStreamQuery(S); }, What);
  memcpy(&Mine, HostLosses, sizeof(Mine));
  return Mine;
}

bool Executor::allRanksAgree(bool Ok, uint32_t Value) {
  bool All = reduceOverRanks(Ok ? 1 : 0, ncclMin) == 1;
  return reduceOverRanks(Value, ncclMin) == reduceOverRanks(Value, ncclMax) &&
         All;
}

int Executor::stopAgreed() {
  // Ranks may be signalled a step apart (another node's scheduler, or
  // the signal landing between two ranks' checks): the largest signal
  // number any rank has seen stops them all after the same step, and
  // starts --term-timeout on those that saw none.
  int Stop = int(reduceOverRanks(uint32_t(stopSignal()), ncclMax,
                                 "whether to stop"));
  if (Stop)
    stopRequestedElsewhere(Stop);
  return Stop;
}

bool Executor::writeCheckpointAt(const std::string &Dir, uint32_t Step,
                                 std::string &Error) {
  CHECK_CUDA(cudaDeviceSynchronize());
  CheckpointHeader H;
  H.ModelHash = P.Settings.ModelHash;
  H.ConfigHash = P.Settings.ConfigHash;
  H.WorldSize = P.Settings.WorldSize;
  H.Rank = uint32_t(Process.Rank);
  H.ZeroStage = P.Settings.ZeroStage;
  H.ParamType = uint32_t(P.Settings.ParamDType);
  H.Step = Step;
  H.OptimizerStep = OptimizerStep;
  H.Seed = Options.Seed;
  H.Scaler = Scaler.state();
  std::vector<StatePart> State = stateParts();
  bool Ok =
      makeDirectories(Dir, Error) &&
      writeShard(
          Dir + "/rank" + std::to_string(Process.Rank) + ".ckpt", H,
          checkpointParts(State),
          [&](size_t I, uint64_t At, uint64_t N, char *Out) {
            return moveState(State[I], At, N, Out, /*Save=*/true, Error);
          },
          Error);
  if (!Ok)
    fprintf(stderr, "dsrun: rank %d: %s: %s\n", Process.Rank, Dir.c_str(),
            Error.c_str());
  // Every rank takes part (stage 3 gathers the shards); rank 0 writes.
  // The weights in save_pretrained's layout, with the model's config.json:
  // transformers loads the checkpoint's folder as it is.
  Ok = writeWeights(Dir) && Ok;
  if (Ok && Process.Rank == 0) {
    // The plan, so that dsrun-reshard can read the shards' layout.
    Ok = writeCheckpointPlan(Dir, P, Error);
  }
  return Ok;
}

void Executor::saveCheckpoint(uint32_t Step) {
  std::string Dir = Options.SaveDir + "/" + checkpointName(Step);
  std::string Error;
  bool Ok = writeCheckpointAt(Dir, Step, Error);
  if (!allRanksAgree(Ok)) {
    // Every rank has finished writing (or failing) by now: rank 0 removes
    // what was written, and the others wait for it before they exit.
    std::string Removed;
    if (Process.Rank == 0)
      Removed = discardCheckpoint(Options.SaveDir, Step);
    allRanksAgree(true);
    fatalError("rank " + std::to_string(Process.Rank) + ": --save: step " +
               std::to_string(Step) + "'s checkpoint could not be written" +
               (Error.empty() ? " on another rank" : ": " + Error) +
               (Removed.empty() ? "" : "; " + Removed) +
               "; latest still names the previous checkpoint");
  }
  if (Process.Rank == 0) {
    if (!writeFileAtomically(Options.SaveDir + "/latest",
                             checkpointName(Step) + "\n", Error))
      fatalError("--save: " + Error);
    fprintf(stderr, "dsrun: saved the checkpoint of step %u in %s\n", Step,
            Dir.c_str());
  }
}

bool Executor::writeMasterWeights(const std::string &Path, uint32_t Step) {
  // A checkpoint gathers each rank's masters from wherever the plan keeps
  // them (device, pinned host, NVMe); dsrun-reshard's reader makes them
  // whole tensors under the names --init gave them. Rank 0 reads every
  // rank's shard: Path must be on storage every node sees.
  std::string Dir = Path + ".masters", Error;
  bool Ok = writeCheckpointAt(Dir, Step, Error);
  if (!allRanksAgree(Ok)) {
    if (Process.Rank == 0) {
      std::error_code Ignored;
      std::filesystem::remove_all(Dir, Ignored);
    }
    fprintf(stderr, "dsrun: rank %d: --save-dtype fp32: the masters could "
                    "not be gathered in %s%s%s\n",
            Process.Rank, Dir.c_str(), Error.empty() ? "" : ": ",
            Error.c_str());
    return false;
  }
  if (Process.Rank == 0) {
    ReshardReport Report;
    Ok = writeFp32Weights(Dir, P, Path, Options.MaxShardBytes, Report,
                          Error);
    if (!Ok)
      fprintf(stderr, "dsrun: --save-dtype fp32: %s (every rank's shard "
                      "must be in %s, on storage every node sees)\n",
              Error.c_str(), Dir.c_str());
    std::error_code Failed;
    std::filesystem::remove_all(Dir, Failed);
    if (Failed)
      fprintf(stderr, "dsrun: %s could not be removed: %s\n", Dir.c_str(),
              Failed.message().c_str());
    if (Ok)
      fprintf(stderr, "dsrun: wrote the fp32 master weights to %s\n",
              Path.c_str());
  }
  return allRanksAgree(Ok);
}

} // namespace dsrun
