//===- Arena.h - The planned memory of one rank, view by view ---*- C++ -*-===//
//
// A rank holds one device arena and one pinned host arena of the sizes its
// rank class needs; every buffer of the memory plan sits at its planned
// offset in one of them, and everything dsrun reads or writes is a view of
// the plan (plan::View, plan::Placement) resolved here, once, to an
// address for this rank. Nothing else decides where data lives.
//
// Host-only: the offsets are computed without a GPU (tested in CI); the
// executor binds the arenas it allocated.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_ARENA_H
#define DSRUN_ARENA_H

#include "dsc/PlanFormat.h"

#include <optional>
#include <string>
#include <vector>

namespace dsrun {

class Arena {
public:
  Arena(const dsc::plan::Plan &P, uint32_t Rank);

  const dsc::plan::Plan &P;
  const uint32_t Rank;
  /// Which partition the rank holds (plan::partitionRank): where its part
  /// of a rank-strided view is.
  const uint32_t Slot;
  /// The rank class whose memory plan this rank follows.
  const uint32_t Class;

  uint64_t deviceBytes() const;
  uint64_t hostBytes() const;
  /// Where the arenas are, once allocated.
  void bind(char *Device, char *Host) { DeviceBase = Device, HostBase = Host; }
  /// The device arena's start: offset() counts from here for device views.
  char *deviceBase() const { return DeviceBase; }
  /// The start of buffer B for this rank, once bound.
  char *bufferBase(uint32_t B) const;

  /// View V of the plan: where it starts for this rank, in which arena
  /// (bytes from the arena's start), and its address once bound; null and
  /// NoOffset for NoIndex.
  static constexpr uint64_t NoOffset = ~uint64_t(0);
  uint64_t offset(uint32_t V) const {
    return V == dsc::plan::NoIndex ? NoOffset : Offsets[V];
  }
  /// Where rank 0's part of a rank-strided view starts in this rank's
  /// buffer: the start of the array every rank has a part of.
  uint64_t wholeOffset(uint32_t V) const {
    return offset(V) - uint64_t(Slot) * P.Views[V].RankStride;
  }
  char *whole(uint32_t V) const {
    return at(V) - uint64_t(Slot) * P.Views[V].RankStride;
  }
  bool onDevice(uint32_t V) const;
  char *at(uint32_t V) const {
    if (V == dsc::plan::NoIndex)
      return nullptr;
    return (onDevice(V) ? DeviceBase : HostBase) + Offsets[V];
  }
  /// Element Elem of view V.
  char *at(uint32_t V, uint64_t Elem) const {
    char *Base = at(V);
    return Base ? Base + Elem * dsc::plan::dtypeBytes(P.Views[V].Type)
                : nullptr;
  }
  const dsc::plan::View &view(uint32_t V) const { return P.Views[V]; }
  uint64_t elems(uint32_t V) const {
    return V == dsc::plan::NoIndex ? 0 : P.Views[V].Elems;
  }

  /// A whole buffer, found by role (the buffers of state a checkpoint
  /// carries): its address, size for this rank's class, and the buffer.
  struct Region {
    char *Ptr = nullptr;
    uint64_t Bytes = 0;
    const dsc::plan::Buffer *B = nullptr;
    explicit operator bool() const { return B != nullptr; }
  };
  Region buffer(dsc::plan::BufferRole Role,
                uint32_t Index = dsc::plan::NoIndex) const;

private:
  std::vector<uint64_t> Offsets;
  char *DeviceBase = nullptr, *HostBase = nullptr;
};

/// Reads and checks (checkPlan) a plan.bin. On failure sets Error and
/// Unreadable when the file could not be opened at all.
std::optional<dsc::plan::Plan> loadPlanFile(const std::string &Path,
                                            std::string &Error,
                                            bool &Unreadable);

/// What a run of this plan needs that checkPlan does not ask of every
/// plan, because dsc also plans what only DeepSpeed runs: the views dsrun
/// reads through, offload transfers dsrun can carry out. Returns "" or
/// the first thing missing, said so that the user knows what to change.
std::string checkRunnable(const dsc::plan::Plan &P);

} // namespace dsrun

#endif
