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
#include "NodeLaunch.h"
#include "Numbers.h"
#include "Arena.h"
#include "LossScaler.h"
#include "dsc/KernelTime.h"
#include "dsc/PlanCheck.h"
#include "dsc/PlanCodec.h"
#include "Nvme.h"
#include "Preemption.h"
#include "Sockets.h"
#include "TokenData.h"
#include "Trace.h"
#include "Watch.h"
#include "Weights.h"
#include "dsc/PlanFacts.h"
#include "dsc/SafeTensors.h"
#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <condition_variable>
#include <iterator>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
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
  // A host that does not resolve: said at once, not retried.
  Lonely.MasterAddr = "no-such-host.invalid";
  auto Start = std::chrono::steady_clock::now();
  EXPECT(!exchangeBlob(Lonely, Nothing, 30, Error));
  EXPECT(Error == "cannot resolve MASTER_ADDR no-such-host.invalid");
  EXPECT(std::chrono::steady_clock::now() - Start < std::chrono::seconds(20));
}

namespace {

/// A TCPStore as torchrun's agent serves one, speaking the wire protocol
/// PyTorch 2.11's client was recorded speaking (TcpStore.h): validation,
/// ping, set, wait and get, validation first or the connection closes. One
/// thread a connection; a wait blocks until its key is set. BadPing
/// answers pings with the wrong nonce, as another service would; NoPing
/// closes the connection at one, as a store older than the ping does.
class FakeStore {
public:
  enum Mode { Good, BadPing, NoPing };
  explicit FakeStore(Mode How = Good) : How(How) {
    Listen = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in Any{};
    Any.sin_family = AF_INET;
    Any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(Listen, reinterpret_cast<sockaddr *>(&Any), sizeof(Any));
    socklen_t Size = sizeof(Any);
    getsockname(Listen, reinterpret_cast<sockaddr *>(&Any), &Size);
    Port = ntohs(Any.sin_port);
    listen(Listen, 16);
    Acceptor = std::thread([this] {
      for (;;) {
        int Fd = accept(Listen, nullptr, nullptr);
        if (Fd < 0)
          return;
        std::lock_guard<std::mutex> L(M);
        Clients.push_back(Fd);
        Workers.emplace_back([this, Fd] { serve(Fd); });
      }
    });
  }
  ~FakeStore() {
    shutdown(Listen, SHUT_RDWR);
    close(Listen);
    Acceptor.join();
    {
      std::lock_guard<std::mutex> L(M);
      Stopping = true;
      for (int Fd : Clients)
        shutdown(Fd, SHUT_RDWR);
    }
    Changed.notify_all();
    for (std::thread &T : Workers)
      T.join();
    for (int Fd : Clients)
      close(Fd);
  }
  int Port = 0;
  std::map<std::string, std::string> Keys; ///< What was set, by raw key.
  std::mutex M;

private:
  Mode How;
  int Listen = -1;
  bool Stopping = false;
  std::thread Acceptor;
  std::vector<std::thread> Workers;
  std::vector<int> Clients;
  std::condition_variable Changed;

  static bool read(int Fd, void *To, size_t N) {
    return receiveAll(Fd, To, N, 10000);
  }
  static bool readString(int Fd, std::string &S) {
    uint64_t Size = 0;
    if (!read(Fd, &Size, 8) || Size > 4096)
      return false;
    S.resize(Size);
    return read(Fd, S.data(), Size);
  }
  void serve(int Fd) {
    for (bool Validated = false;;) {
      uint8_t Query = 0;
      uint32_t Word = 0;
      std::string Key, Value;
      if (!read(Fd, &Query, 1) || (!Validated && Query != 0))
        return;
      if (Query == 0) { // VALIDATE
        if (!read(Fd, &Word, 4) || Word != 0x3C85F7CE)
          return;
        Validated = true;
      } else if (Query == 13) { // PING
        if (!read(Fd, &Word, 4) || How == NoPing) {
          shutdown(Fd, SHUT_RDWR);
          return;
        }
        Word += How == BadPing;
        sendAll(Fd, &Word, 4);
      } else if (Query == 1) { // SET
        if (!readString(Fd, Key) || !readString(Fd, Value))
          return;
        std::lock_guard<std::mutex> L(M);
        Keys[Key] = Value;
        Changed.notify_all();
      } else if (Query == 6) { // WAIT
        uint64_t Count = 0;
        if (!read(Fd, &Count, 8) || Count != 1 || !readString(Fd, Key))
          return;
        std::unique_lock<std::mutex> L(M);
        Changed.wait(L, [&] { return Stopping || Keys.count(Key); });
        if (Stopping)
          return;
        uint8_t StopWaiting = 0;
        sendAll(Fd, &StopWaiting, 1);
      } else if (Query == 3) { // GET
        if (!readString(Fd, Key))
          return;
        std::lock_guard<std::mutex> L(M);
        const std::string &V = Keys.at(Key);
        uint64_t Size = V.size();
        sendAll(Fd, &Size, 8);
        sendAll(Fd, V.data(), V.size());
      } else {
        return;
      }
    }
  }
};

} // namespace

/// Under torchrun the agent already serves a TCPStore at MASTER_PORT: dsrun
/// joins it as a client (rank 0 sets the id, the others wait for it) under
/// a key of the run and restart, instead of listening on the taken port.
TEST(Launch, TorchrunAgentStore) {
  std::string Error;
  for (const char *V : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID",
                        "DSRUN_CHILD", "TORCHELASTIC_RUN_ID",
                        "TORCHELASTIC_RESTART_COUNT"})
    unsetenv(V);
  setenv("RANK", "1", 1);
  setenv("WORLD_SIZE", "2", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "29500", 1);
  setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1);
  std::optional<ProcessInfo> I = processFromEnvironment(Error);
  EXPECT(I && I->Launcher == "torchrun" && I->AgentStore &&
         I->StoreKey == "dsrun/none/attempt_0/nccl_id");
  setenv("TORCHELASTIC_RUN_ID", "job7", 1);
  setenv("TORCHELASTIC_RESTART_COUNT", "2", 1);
  I = processFromEnvironment(Error);
  EXPECT(I && I->StoreKey == "dsrun/job7/attempt_2/nccl_id");
  // dsrun -n's own children listen as before, whatever they inherit.
  setenv("DSRUN_CHILD", "1", 1);
  I = processFromEnvironment(Error);
  EXPECT(I && !I->AgentStore);
  setenv("TORCHELASTIC_USE_AGENT_STORE", "False", 1);
  unsetenv("DSRUN_CHILD");
  I = processFromEnvironment(Error);
  EXPECT(I && !I->AgentStore);
  for (const char *V : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
                        "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RUN_ID",
                        "TORCHELASTIC_RESTART_COUNT"})
    unsetenv(V);

  auto Process = [](int Rank, int Port) {
    ProcessInfo P;
    P.Rank = P.LocalRank = Rank;
    P.WorldSize = 4;
    P.MasterPort = Port;
    P.Launcher = "torchrun";
    P.AgentStore = true;
    P.StoreKey = "dsrun/none/attempt_0/nccl_id";
    return P;
  };
  {
    // Three ranks wait before rank 0 has set the id.
    FakeStore Store;
    std::vector<std::thread> Ranks;
    std::vector<std::string> Got(4);
    std::vector<int> Ok(4, 0);
    for (int R = 1; R < 4; ++R)
      Ranks.emplace_back([&, R] {
        std::string E;
        Ok[R] = exchangeBlob(Process(R, Store.Port), Got[R], 20, E);
      });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::string Blob("nccl\0id", 7);
    EXPECT(exchangeBlob(Process(0, Store.Port), Blob, 20, Error));
    for (std::thread &T : Ranks)
      T.join();
    for (int R = 1; R < 4; ++R)
      EXPECT(Ok[R] && Got[R] == Blob);
    std::lock_guard<std::mutex> L(Store.M);
    EXPECT(Store.Keys.size() == 1 &&
           Store.Keys.count("/dsrun/none/attempt_0/nccl_id"));
  }
  {
    // Never set: the wait ends at the timeout, with the key named.
    FakeStore Store;
    std::string Blob;
    EXPECT(!exchangeBlob(Process(1, Store.Port), Blob, 1, Error));
    EXPECT(Error.find("rank 1, torchrun's agent store: no key "
                      "'dsrun/none/attempt_0/nccl_id'") != std::string::npos);
  }
  {
    // Something else on the port: refused by its answer to the ping.
    FakeStore Other(FakeStore::BadPing);
    std::string Blob = "id";
    EXPECT(!exchangeBlob(Process(0, Other.Port), Blob, 5, Error));
    EXPECT(Error.find("another service on that port") != std::string::npos);
  }
  {
    // A store older than the ping: joined with the validation alone.
    FakeStore Old(FakeStore::NoPing);
    std::string Blob = "id-1", Got;
    std::thread Reader([&] {
      std::string E;
      EXPECT(exchangeBlob(Process(3, Old.Port), Got, 20, E) && Got == "id-1");
    });
    EXPECT(exchangeBlob(Process(0, Old.Port), Blob, 20, Error));
    Reader.join();
  }
  // Nothing there at all.
  std::string Blob;
  EXPECT(!exchangeBlob(Process(2, 1), Blob, 1, Error));
  EXPECT(Error.find("cannot reach the TCPStore at 127.0.0.1:1") !=
         std::string::npos);
}

/// Runs Body in a child process and returns its wait status: signal
/// handlers installed there leave the test's own alone.
template <typename F> static int inChild(F Body) {
  fflush(nullptr);
  pid_t Pid = fork();
  if (Pid == 0) {
    Body();
    _exit(0);
  }
  int Status = 0;
  waitpid(Pid, &Status, 0);
  return Status;
}

/// SIGTERM as a scheduler sends it: the run is asked to stop, not killed;
/// the deadline ends it with its own status; a second signal two seconds
/// later kills at once, one sooner is the same request; the launcher
/// passes the signal on to its ranks.
TEST(Launch, StopSignals) {
  int Asked = inChild([] {
    catchStopSignals(30);
    raise(SIGTERM);
    raise(SIGTERM); // the same request, arriving twice
    _exit(stopSignal() == SIGTERM ? 3 : 4);
  });
  EXPECT(WIFEXITED(Asked) && WEXITSTATUS(Asked) == 3);
  int Late = inChild([] {
    catchStopSignals(1);
    raise(SIGINT);
    sleep(3); // the alarm ends the process first
    _exit(5);
  });
  EXPECT(WIFEXITED(Late) && WEXITSTATUS(Late) == ExitTermTimeout);
  int Twice = inChild([] {
    catchStopSignals(30);
    raise(SIGTERM);
    sleep(2);
    raise(SIGTERM);
    _exit(6);
  });
  EXPECT(WIFSIGNALED(Twice) && WTERMSIG(Twice) == SIGTERM);
  // Another rank's signal, learnt from the agreement: the same deadline.
  int Relayed = inChild([] {
    catchStopSignals(1);
    stopRequestedElsewhere(SIGTERM);
    if (stopSignal() != SIGTERM)
      _exit(7);
    sleep(3);
    _exit(8);
  });
  EXPECT(WIFEXITED(Relayed) && WEXITSTATUS(Relayed) == ExitTermTimeout);
  int Forwarded = inChild([] {
    static int Rank[1];
    Rank[0] = fork();
    if (Rank[0] == 0) {
      catchStopSignals(30);
      while (!stopSignal())
        usleep(1000);
      _exit(ExitStopped);
    }
    forwardStopSignals(Rank, 1);
    usleep(100000);
    raise(SIGINT);
    int S = 0;
    waitpid(Rank[0], &S, 0);
    _exit(WIFEXITED(S) ? WEXITSTATUS(S) : 99);
  });
  EXPECT(WIFEXITED(Forwarded) && WEXITSTATUS(Forwarded) == ExitStopped);
}

/// A job of three ranks whose watch runs ReportAfterMs, one rank of which
/// (Stopped) is stopped by SIGSTOP a second in; what ranks 0 and 1 then
/// say of the others.
static std::vector<std::string> watchWithOneStopped(int Stopped,
                                                    int ReportAfterMs) {
  int PortPipe[2], Said[2];
  EXPECT(pipe(PortPipe) == 0 && pipe(Said) == 0);
  std::vector<pid_t> Ranks;
  for (int R = 0; R < 3; ++R) {
    fflush(nullptr);
    pid_t Pid = fork();
    if (Pid == 0) {
      Watch W;
      W.progress(7, uint32_t(R));
      std::string Error;
      int Port = 0;
      if (R == 0) {
        if (!W.listen(3, Error))
          _exit(1);
        Port = W.port();
        for (int K = 0; K < 2; ++K)
          (void)!write(PortPipe[1], &Port, sizeof(Port));
      } else if (read(PortPipe[0], &Port, sizeof(Port)) != sizeof(Port) ||
                 !W.connect(R, "127.0.0.1", Port, Error)) {
        _exit(1);
      }
      usleep(useconds_t(ReportAfterMs) * 1000);
      std::string Text = std::to_string(R) + ": " + W.suspects() +
                         (W.silentRank() ? " [silent]" : "") + "\n";
      (void)!write(Said[1], Text.data(), Text.size());
      _exit(0);
    }
    Ranks.push_back(Pid);
  }
  close(Said[1]);
  usleep(1000000);
  kill(Ranks[size_t(Stopped)], SIGSTOP);
  // The two ranks not stopped each say one line (no end of file to wait
  // for: a stopped process of the other job may hold this pipe too).
  std::string All;
  char Buffer[512];
  pollfd Poll{Said[0], POLLIN, 0};
  while (std::count(All.begin(), All.end(), '\n') < 2 &&
         poll(&Poll, 1, ReportAfterMs + 5000) > 0) {
    ssize_t N = read(Said[0], Buffer, sizeof(Buffer));
    if (N <= 0)
      break;
    All.append(Buffer, size_t(N));
  }
  kill(Ranks[size_t(Stopped)], SIGKILL);
  for (pid_t Pid : Ranks)
    waitpid(Pid, nullptr, 0);
  close(Said[0]);
  close(PortPipe[0]);
  close(PortPipe[1]);
  std::vector<std::string> Lines(3);
  size_t At = 0;
  for (size_t End; (End = All.find('\n', At)) != std::string::npos; At = End + 1)
    Lines[size_t(All[At] - '0')] = All.substr(At + 3, End - At - 3);
  return Lines;
}

/// The watch names a stopped rank on every other rank, and rank 0 when
/// rank 0 is the one stopped; nobody is named while every rank beats.
TEST(Launch, WatchNamesTheStoppedRank) {
  std::vector<std::string> Quiet, RankZero;
  std::thread Other([&] { RankZero = watchWithOneStopped(0, 6500); });
  // A rank that never connects (a port closed to it) is not called
  // stopped.
  std::string Unreached;
  std::thread Lonely([&] {
    Watch W;
    std::string Error;
    EXPECT(W.listen(2, Error) && W.watching());
    usleep(3500000);
    Unreached = W.suspects();
    // Never heard from is not silent: agreements keep waiting for it.
    EXPECT(!W.silentRank());
  });
  Quiet = watchWithOneStopped(2, 6500);
  Other.join();
  Lonely.join();
  EXPECT_TRUE(Unreached == "rank 1 has never reached the watch (a port closed "
                           "to it, or stopped before its first beat)")
      << Unreached;
  const char *Two = "rank 2 has not been heard from for ";
  EXPECT_TRUE(Quiet[0].find(Two) == 0) << Quiet[0];
  EXPECT_TRUE(Quiet[0].find("(last at step 7, instruction 2): stopped, stuck "
                            "outside the GPU or gone") != std::string::npos)
      << Quiet[0];
  EXPECT(Quiet[1] == Quiet[0] || Quiet[1].find(Two) == 0);
  EXPECT(RankZero[1].find("rank 0 has not answered for ") == 0);
  EXPECT(RankZero[2].find("rank 0 has not answered for ") == 0);
  // What cuts an agreement's wait short (Executor::waitUntil).
  for (const std::string &Line : {Quiet[0], RankZero[1], RankZero[2]})
    EXPECT_TRUE(Line.size() > 9 && Line.substr(Line.size() - 9) == " [silent]")
        << Line;
  Watch Alone;
  EXPECT(Alone.suspects().empty() && !Alone.watching());
}

/// A rank whose connection to rank 0 drops beats again on a new one, so
/// that it never looks silent for good (agreements end on a silent rank).
TEST(Launch, WatchReconnects) {
  int Listen = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in Any{};
  Any.sin_family = AF_INET;
  Any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t Size = sizeof(Any);
  EXPECT(bind(Listen, reinterpret_cast<sockaddr *>(&Any), sizeof(Any)) == 0 &&
         listen(Listen, 4) == 0 &&
         getsockname(Listen, reinterpret_cast<sockaddr *>(&Any), &Size) == 0);
  Watch W;
  std::string Error;
  W.progress(3, 9);
  EXPECT(W.connect(1, "127.0.0.1", ntohs(Any.sin_port), Error));
  for (int Connection = 0; Connection < 2; ++Connection) {
    pollfd Poll{Listen, POLLIN, 0};
    EXPECT(poll(&Poll, 1, 5000) == 1);
    int Fd = accept(Listen, nullptr, nullptr);
    uint32_t Beat[4] = {};
    EXPECT(Fd >= 0 && receiveAll(Fd, Beat, sizeof(Beat), 5000));
    EXPECT(Beat[0] == 1 && Beat[1] == 3 && Beat[2] == 9);
    close(Fd); // The first connection dropped; the second one served.
  }
  EXPECT(W.watching());
  close(Listen);
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

// DeepSpeed's hostfile filters, as its runner applies them.
TEST(Launch, HostfileFilters) {
  std::string Error;
  auto Hosts = parseHostfile("a slots=4\n  # note\nb slots=2 # two\n\nc slots=4\n",
                             "hosts", Error);
  ASSERT_TRUE(Hosts) << Error;
  ASSERT_EQ(Hosts->size(), 3u);
  EXPECT_EQ((*Hosts)[2].Line, 5);
  auto Pick = [&](HostFilter F) {
    std::string Out;
    auto Nodes = selectNodes(*Hosts, F, Error);
    if (!Nodes)
      return "error: " + Error;
    for (const LaunchNode &N : *Nodes)
      Out += N.Host + "[" + gpuList(N.Gpus) + "] ";
    return Out;
  };
  EXPECT_EQ(Pick({}), "a[0-3] b[0,1] c[0-3] ");
  HostFilter F;
  F.Include = "c:3,1@a";
  EXPECT_EQ(Pick(F), "a[0-3] c[1,3] "); // the hostfile's order
  F.Include = "a:1@a:0"; // the same host twice: the union
  EXPECT_EQ(Pick(F), "a[0,1] ");
  F.Include = "a:2@a"; // slots and bare: the slots (DeepSpeed's rule)
  EXPECT_EQ(Pick(F), "a[2] ");
  F = {};
  F.Exclude = "a:0,2@b";
  EXPECT_EQ(Pick(F), "a[1,3] c[0-3] ");
  F = {};
  F.NumNodes = 2;
  F.NumGpus = 2;
  EXPECT_EQ(Pick(F), "a[0,1] b[0,1] ");
  F = {};
  F.Include = "a@@b";
  EXPECT_EQ(Pick(F), "error: --include 'a@@b': '' is not NAME or "
                     "NAME:SLOT[,SLOT...] (nodes joined by @)");
  F.Include = "a:1:2";
  EXPECT_NE(Pick(F).find("is not NAME"), std::string::npos);
  F.Include = "a:x";
  EXPECT_NE(Pick(F).find("is not NAME"), std::string::npos);

  std::vector<LaunchNode> Two = {{"a", {0, 1}}, {"b", {2, 3}}};
  EXPECT_TRUE(matchesPlan(Two, 2, 2, Error));
  EXPECT_FALSE(matchesPlan(Two, 1, 4, Error));
  EXPECT_FALSE(matchesPlan({{"a", {0, 1}}, {"b", {2}}}, 2, 2, Error));
  EXPECT_EQ(gpuList({0, 1, 2, 5, 7, 8}), "0-2,5,7,8");
  EXPECT_FALSE(parseHostfile("-oProxyCommand=x slots=1\n", "h", Error));
  EXPECT_EQ(Error, "h:1: '-oProxyCommand=x' starts with '-': not a host name");
  EXPECT_EQ(shellQuote("plain/path_1.bin"), "plain/path_1.bin");
  EXPECT_EQ(shellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(shellQuote(""), "''");
  EXPECT_TRUE(isThisMachine("localhost"));
  EXPECT_TRUE(isThisMachine("127.0.0.2"));
}

// The launch flags come out of the ranks' command line; -n's ranks find
// rank 0 where --nodes says.
TEST(Launch, LaunchFlags) {
  std::vector<std::string> Args = {"dsrun", "-n", "2", "plan.bin", "--nodes",
                                   "3", "--node-rank", "1", "--steps", "4"};
  LaunchRequest R;
  std::string Error;
  setenv("MASTER_ADDR", "node0", 1);
  setenv("MASTER_PORT", "1234", 1);
  ASSERT_TRUE(takeLaunchFlags(Args, R, Error)) << Error;
  EXPECT_EQ(Args, (std::vector<std::string>{"dsrun", "plan.bin", "--steps",
                                            "4"}));
  EXPECT_EQ(R.Processes, 2);
  EXPECT_EQ(R.Place.Nodes, 3);
  EXPECT_EQ(R.Place.NodeRank, 1);
  EXPECT_EQ(R.Place.MasterAddr, "node0");
  EXPECT_EQ(R.Place.MasterPort, 1234);
  // One node: this machine, whatever MASTER_ADDR says.
  Args = {"dsrun", "-n", "2", "plan.bin"};
  R = {};
  ASSERT_TRUE(takeLaunchFlags(Args, R, Error)) << Error;
  EXPECT_EQ(R.Place.MasterAddr, "127.0.0.1");
  Args = {"dsrun", "--hostfile", "h", "--include", "a:0", "--show-launch",
          "plan.bin"};
  R = {};
  ASSERT_TRUE(takeLaunchFlags(Args, R, Error)) << Error;
  EXPECT_EQ(Args, (std::vector<std::string>{"dsrun", "plan.bin"}));
  EXPECT_EQ(R.Hostfile.Filter.Include, "a:0");
  EXPECT_EQ(R.Hostfile.MasterPort, 1234); // MASTER_PORT, not given
  EXPECT_TRUE(R.Hostfile.Show);
  // Every count is read one way: digits within the range, nothing else.
  long N = 0;
  for (const char *Bad : {"", "+4", " 4", "4x", "-1", "0x10", "65",
                          "99999999999999999999"})
    EXPECT_FALSE(parseCount(Bad, 1, 64, N)) << Bad;
  EXPECT_TRUE(parseCount("064", 1, 64, N));
  EXPECT_EQ(N, 64);
  Args = {"dsrun", "plan.bin", "--master-port"};
  EXPECT_FALSE(takeLaunchFlags(Args, R, Error));
  EXPECT_EQ(Error, "--master-port needs a value");
  unsetenv("MASTER_ADDR");
  unsetenv("MASTER_PORT");
}
