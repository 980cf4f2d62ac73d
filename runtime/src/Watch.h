//===- Watch.h - Which rank stopped answering -------------------*- C++ -*-===//
//
// When a rank stops (SIGSTOP, a node gone, an NCCL call that never
// returns), the others wait in a collective that cannot finish; NCCL does
// not say for whom. The watch says: every rank sends rank 0, over TCP
// beside NCCL, where its host is (step and instruction) once a second,
// and rank 0 answers with the ranks it has not heard from for longer than
// three beats. A rank whose step outlasts --timeout names them (or rank 0
// itself, when rank 0 stops answering) before it aborts its communicator.
// The beats run on a thread of their own, so a rank waiting on the GPU
// still beats; a stopped process does not.
//
//===----------------------------------------------------------------------===//

#ifndef DSRUN_WATCH_H
#define DSRUN_WATCH_H

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dsrun {

class Watch {
public:
  Watch() = default;
  Watch(const Watch &) = delete;
  Watch &operator=(const Watch &) = delete;
  ~Watch();

  /// Rank 0: listens on an unused port (port() says which) for WorldSize
  /// - 1 ranks. Call before the rendezvous, which hands the port on.
  bool listen(int WorldSize, std::string &Error);
  int port() const { return Port; }
  /// Any other rank: beats to rank 0 at Host:Port.
  bool connect(int Rank, const std::string &Host, int Port,
               std::string &Error);

  /// Where this rank's host is, for the others' messages.
  void progress(uint32_t Step, uint32_t Instruction) {
    Position.store(uint64_t(Step) << 32 | Instruction,
                   std::memory_order_relaxed);
  }

  /// The ranks that seem stopped, as a sentence for a message ("rank 2
  /// has not been heard from for 31 s (last at step 12, instruction
  /// 345)"), or "" when every rank beats.
  std::string suspects() const;
  /// Whether a rank the watch has heard from has stopped answering (rank
  /// 0: a peer; the others: rank 0). A rank never heard from is not one:
  /// the watch may simply not reach it.
  bool silentRank() const;

  /// Whether this rank takes part in a watch (listens, or beats).
  bool watching() const { return Listen >= 0 || Joined; }

  /// Milliseconds between beats; a rank is suspect after three missed.
  static constexpr int BeatMs = 1000;

private:
  struct Heard {
    int64_t AtMs = 0; ///< When, on rank 0's clock; 0: never.
    uint64_t Position = 0;
  };
  void serve();
  void beat();
  static int64_t nowMs();

  /// A connection to rank 0 within LimitMs: the first, or a new one after
  /// one dropped (-1, Why set: none).
  int open(int LimitMs, std::string &Why) const;

  int Rank = 0, WorldSize = 1, Port = 0;
  int Listen = -1, Socket = -1;
  /// Beating to rank 0 at PeerHost:PeerPort (Socket may be between
  /// connections).
  bool Joined = false;
  std::string PeerHost;
  int PeerPort = 0;
  std::atomic<uint64_t> Position{0};
  std::atomic<bool> Stop{false};
  std::thread Thread;
  mutable std::mutex Lock;
  /// Rank 0: what it heard from each rank. Others: rank 0's last list
  /// of suspects, and when rank 0 last answered.
  std::vector<Heard> Ranks;
  std::string RemoteSuspects;
  int64_t AnsweredMs = 0;
  int64_t StartedMs = 0;
};

} // namespace dsrun

#endif
