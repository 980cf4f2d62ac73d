//===- Watch.cpp - Which rank stopped answering ---------------------------===//
//
// A beat is 16 bytes: u32 rank, u32 step, u32 instruction, u32 zero. Rank
// 0 answers each with u32 length and that many bytes of its suspects
// sentence (empty when every rank beats). Host byte order: the ranks of
// one job run one build.
//
//===----------------------------------------------------------------------===//

#include "Watch.h"
#include "Sockets.h"

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

namespace dsrun {

namespace {

constexpr int SuspectAfterMs = 3 * Watch::BeatMs;

std::string where(uint64_t Position) {
  if (Position == 0)
    return "before the first step";
  return "at step " + std::to_string(Position >> 32) + ", instruction " +
         std::to_string(Position & 0xffffffffu);
}

} // namespace

int64_t Watch::nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Watch::~Watch() {
  Stop = true;
  if (Thread.joinable())
    Thread.join();
  for (int Fd : {Listen, Socket})
    if (Fd >= 0)
      close(Fd);
}

bool Watch::listen(int World, std::string &Error) {
  WorldSize = World;
  Listen = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in Any{};
  Any.sin_family = AF_INET;
  Any.sin_addr.s_addr = htonl(INADDR_ANY);
  socklen_t Length = sizeof(Any);
  if (Listen < 0 ||
      bind(Listen, reinterpret_cast<sockaddr *>(&Any), sizeof(Any)) != 0 ||
      ::listen(Listen, 128) != 0 ||
      getsockname(Listen, reinterpret_cast<sockaddr *>(&Any), &Length) != 0) {
    Error = std::string("cannot listen: ") + strerror(errno);
    if (Listen >= 0)
      close(Listen);
    Listen = -1;
    return false;
  }
  Port = ntohs(Any.sin_port);
  Ranks.assign(size_t(World), Heard{});
  StartedMs = nowMs();
  Thread = std::thread([this] { serve(); });
  return true;
}

bool Watch::connect(int MyRank, const std::string &Host, int At,
                    std::string &Error) {
  Rank = MyRank;
  PeerHost = Host;
  PeerPort = At;
  // A firewall that drops the packets must not hold the setup for the
  // minutes a connect waits by default.
  std::string Why;
  Socket = open(10000, Why);
  if (Socket < 0) {
    Error = "cannot reach rank 0 at " + Host + ":" + std::to_string(At) +
            ": " + Why;
    return false;
  }
  AnsweredMs = StartedMs = nowMs();
  Joined = true;
  Thread = std::thread([this] { beat(); });
  return true;
}

int Watch::open(int LimitMs, std::string &Why) const {
  int Fd = connectTo(PeerHost, PeerPort, LimitMs, Why);
  // A beat to a rank 0 that stopped reading must not block the thread
  // for good: it checks Stop between beats.
  timeval Limit{10, 0};
  if (Fd >= 0)
    setsockopt(Fd, SOL_SOCKET, SO_SNDTIMEO, &Limit, sizeof(Limit));
  return Fd;
}

void Watch::beat() {
  // Answers are read as they come and parsed whole, so that one late or
  // cut by a signal never puts the frames out of step.
  std::string Pending;
  while (!Stop) {
    uint64_t Now = Position.load(std::memory_order_relaxed);
    uint32_t Beat[4] = {uint32_t(Rank), uint32_t(Now >> 32),
                        uint32_t(Now & 0xffffffffu), 0};
    // Rank 0 stopped or gone: its answer stays old, which suspects() says.
    // A connection that dropped (rank 0 closed it, a network blip) is made
    // again, so that a live rank never looks silent for good.
    auto Until = nowMs() + BeatMs;
    if (Socket < 0) {
      std::string Why;
      int Fd = open(BeatMs / 2, Why);
      std::lock_guard<std::mutex> Hold(Lock);
      Socket = Fd;
      Pending.clear();
    }
    bool Sent = Socket >= 0 && sendAll(Socket, Beat, sizeof(Beat));
    bool Dropped = Socket >= 0 && !Sent;
    for (int64_t Left; Sent && !Stop && (Left = Until - nowMs()) > 0;) {
      pollfd Poll{Socket, POLLIN, 0};
      if (poll(&Poll, 1, int(Left)) <= 0)
        continue;
      char Buffer[4096];
      ssize_t N = recv(Socket, Buffer, sizeof(Buffer), 0);
      if (N <= 0) {
        Dropped = true;
        break;
      }
      Pending.append(Buffer, size_t(N));
      std::string Latest;
      bool Any = false;
      while (Pending.size() >= 4) {
        uint32_t Length;
        memcpy(&Length, Pending.data(), 4);
        if (Pending.size() < 4 + size_t(Length))
          break;
        Latest = Pending.substr(4, Length);
        Pending.erase(0, 4 + size_t(Length));
        Any = true;
      }
      if (Any) {
        std::lock_guard<std::mutex> Hold(Lock);
        RemoteSuspects = Latest;
        AnsweredMs = nowMs();
      }
    }
    if (Dropped) {
      std::lock_guard<std::mutex> Hold(Lock);
      close(Socket);
      Socket = -1;
    }
    while (!Stop && nowMs() < Until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void Watch::serve() {
  struct Peer {
    int Fd;
    uint32_t Got = 0;
    uint32_t Beat[4] = {};
  };
  std::vector<Peer> Peers;
  while (!Stop) {
    std::vector<pollfd> Polls = {{Listen, POLLIN, 0}};
    for (const Peer &P : Peers)
      Polls.push_back({P.Fd, POLLIN, 0});
    if (poll(Polls.data(), Polls.size(), 100) <= 0)
      continue;
    if (Polls[0].revents & POLLIN) {
      int Fd = accept(Listen, nullptr, nullptr);
      if (Fd >= 0) {
        // A rank that stops reading must not stall the others' answers.
        timeval Limit{1, 0};
        setsockopt(Fd, SOL_SOCKET, SO_SNDTIMEO, &Limit, sizeof(Limit));
        Peers.push_back({Fd});
      }
    }
    for (size_t K = 1; K < Polls.size(); ++K) {
      Peer &P = Peers[K - 1];
      if (!(Polls[K].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      ssize_t N = recv(P.Fd, reinterpret_cast<char *>(P.Beat) + P.Got,
                       sizeof(P.Beat) - P.Got, 0);
      if (N <= 0) {
        close(P.Fd);
        P.Fd = -1;
        continue;
      }
      P.Got += uint32_t(N);
      if (P.Got < sizeof(P.Beat))
        continue;
      P.Got = 0;
      if (P.Beat[0] == 0 || P.Beat[0] >= uint32_t(WorldSize))
        continue;
      {
        std::lock_guard<std::mutex> Hold(Lock);
        Ranks[P.Beat[0]] = {nowMs(), uint64_t(P.Beat[1]) << 32 | P.Beat[2]};
      }
      std::string Text = suspects();
      uint32_t Length = uint32_t(Text.size());
      if (!sendAll(P.Fd, &Length, 4) || !sendAll(P.Fd, Text.data(), Length)) {
        close(P.Fd);
        P.Fd = -1;
      }
    }
    std::vector<Peer> Open;
    for (const Peer &P : Peers)
      if (P.Fd >= 0)
        Open.push_back(P);
    Peers.swap(Open);
  }
  for (const Peer &P : Peers)
    close(P.Fd);
}

bool Watch::silentRank() const {
  std::lock_guard<std::mutex> Hold(Lock);
  int64_t Now = nowMs();
  if (Listen < 0)
    return Joined && Now - AnsweredMs > SuspectAfterMs;
  for (int R = 1; R < WorldSize; ++R) {
    const Heard &H = Ranks[size_t(R)];
    if (H.AtMs && Now - H.AtMs > SuspectAfterMs)
      return true;
  }
  return false;
}

std::string Watch::suspects() const {
  std::lock_guard<std::mutex> Hold(Lock);
  int64_t Now = nowMs();
  if (Listen < 0) {
    if (!Joined)
      return "";
    if (Now - AnsweredMs <= SuspectAfterMs)
      return RemoteSuspects;
    return "rank 0 has not answered for " +
           std::to_string((Now - AnsweredMs) / 1000) + " s: it is stopped, "
           "stuck outside the GPU or gone";
  }
  std::string Text;
  int Named = 0, More = 0, Silent = 0;
  for (int R = 1; R < WorldSize; ++R) {
    const Heard &H = Ranks[size_t(R)];
    int64_t Since = H.AtMs ? H.AtMs : StartedMs;
    if (Now - Since <= SuspectAfterMs)
      continue;
    if (Named == 4) {
      ++More;
      continue;
    }
    Silent += H.AtMs != 0;
    Text += std::string(Named++ ? "; " : "") + "rank " + std::to_string(R) +
            (H.AtMs ? " has not been heard from for " +
                          std::to_string((Now - Since) / 1000) + " s (last " +
                          where(H.Position) + ")"
                    : std::string(" has never reached the watch (a port "
                                  "closed to it, or stopped before its first "
                                  "beat)"));
  }
  if (More)
    Text += "; and " + std::to_string(More) + " more";
  if (Silent)
    Text += ": stopped, stuck outside the GPU or gone";
  return Text;
}

} // namespace dsrun
