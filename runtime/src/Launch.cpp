//===- Launch.cpp ---------------------------------------------------------===//

#include "Launch.h"
#include "Numbers.h"
#include "Sockets.h"
#include "Preemption.h"
#include "TcpStore.h"

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#ifdef DSRUN_HAVE_MPI
#include <mpi.h>
#endif

namespace dsrun {

namespace {

const char *env(const char *Name) {
  const char *V = getenv(Name);
  return V && *V ? V : nullptr;
}

bool toInt(const char *Text, int &Out) {
  long V = 0;
  if (!Text || !parseCount(Text, 0, 1 << 24, V))
    return false;
  Out = int(V);
  return true;
}

#ifdef DSRUN_HAVE_MPI
/// Rank 0's Blob to every rank of MPI_COMM_WORLD.
bool broadcastByMpi(const ProcessInfo &Info, std::string &Blob,
                    std::string &Error) {
  int Initialized = 0;
  MPI_Initialized(&Initialized);
  if (!Initialized) {
    int Provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &Provided) !=
        MPI_SUCCESS) {
      Error = "MPI_Init failed";
      return false;
    }
  }
  int Rank = -1, Size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &Rank);
  MPI_Comm_size(MPI_COMM_WORLD, &Size);
  if (Rank != Info.Rank || Size != Info.WorldSize) {
    Error = "MPI says rank " + std::to_string(Rank) + " of " +
            std::to_string(Size) + ", the environment " +
            std::to_string(Info.Rank) + " of " +
            std::to_string(Info.WorldSize);
    return false;
  }
  unsigned long long Bytes = Blob.size();
  if (MPI_Bcast(&Bytes, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD) !=
      MPI_SUCCESS) {
    Error = "MPI_Bcast of the NCCL id failed";
    return false;
  }
  Blob.resize(Bytes);
  if (Bytes && MPI_Bcast(Blob.data(), int(Bytes), MPI_BYTE, 0,
                         MPI_COMM_WORLD) != MPI_SUCCESS) {
    Error = "MPI_Bcast of the NCCL id failed";
    return false;
  }
  return true;
}
#endif

} // namespace

bool builtWithMpi() {
#ifdef DSRUN_HAVE_MPI
  return true;
#else
  return false;
#endif
}

int leaveJob(int Status) {
#ifdef DSRUN_HAVE_MPI
  int Initialized = 0, Finalized = 0;
  MPI_Initialized(&Initialized);
  MPI_Finalized(&Finalized);
  if (Initialized && !Finalized) {
    // A failed rank must not wait in MPI_Finalize for peers that may be
    // stuck in NCCL: it takes the whole job down instead.
    if (Status != 0)
      MPI_Abort(MPI_COMM_WORLD, Status);
    MPI_Finalize();
  }
#endif
  return Status;
}

std::optional<ProcessInfo> processFromEnvironment(std::string &Error) {
  ProcessInfo I;
  const char *Rank = nullptr, *Size = nullptr, *Local = nullptr;
  if (env("RANK") && env("WORLD_SIZE")) {
    Rank = env("RANK");
    Size = env("WORLD_SIZE");
    Local = env("LOCAL_RANK");
    I.Launcher = env("DSRUN_CHILD") ? "dsrun" : "torchrun";
  } else if (env("OMPI_COMM_WORLD_RANK")) {
    Rank = env("OMPI_COMM_WORLD_RANK");
    Size = env("OMPI_COMM_WORLD_SIZE");
    Local = env("OMPI_COMM_WORLD_LOCAL_RANK");
    I.Launcher = "mpi";
  } else if (env("PMI_RANK") && env("PMI_SIZE")) {
    Rank = env("PMI_RANK");
    Size = env("PMI_SIZE");
    // Hydra (MPICH, Intel MPI), Cray MPICH, or srun's PMI.
    Local = env("MPI_LOCALRANKID")   ? env("MPI_LOCALRANKID")
            : env("PMI_LOCAL_RANK") ? env("PMI_LOCAL_RANK")
                                    : env("SLURM_LOCALID");
    I.Launcher = "mpi";
  } else if (env("SLURM_PROCID") && env("SLURM_NTASKS")) {
    Rank = env("SLURM_PROCID");
    Size = env("SLURM_NTASKS");
    Local = env("SLURM_LOCALID");
    I.Launcher = "slurm";
  } else {
    I.Launcher = "single";
    return I;
  }
  if (!toInt(Rank, I.Rank) || !toInt(Size, I.WorldSize) ||
      I.WorldSize == 0 || I.Rank >= I.WorldSize) {
    Error = "the " + I.Launcher + " environment gives no valid rank and "
            "world size";
    return std::nullopt;
  }
  // The processes on this node, from the first launcher variable that is
  // set (none: dsrun guesses from the GPUs).
  for (const char *V : {"LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                        "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}) {
    const char *Text = env(V);
    if (!Text)
      continue;
    if (!toInt(Text, I.LocalSize) || I.LocalSize == 0) {
      I.LocalSize = 0;
      I.LocalSizeProblem = std::string(V) + " is '" + Text +
                           "', not a count of this node's processes; give "
                           "--host-threads N for the host optimizer's "
                           "threads";
    }
    break;
  }
  if (Local && !toInt(Local, I.LocalRank)) {
    Error = "the " + I.Launcher + " environment's local rank is not a number";
    return std::nullopt;
  }
  if (!Local)
    I.LocalRank = I.Rank;
  I.Mpi = I.Launcher == "mpi" && builtWithMpi();
  if (I.WorldSize > 1 && !I.Mpi) {
    if (!env("MASTER_ADDR") || !env("MASTER_PORT")) {
      Error = "a job of " + std::to_string(I.WorldSize) +
              " ranks started by " + I.Launcher +
              " needs MASTER_ADDR and MASTER_PORT for the NCCL rendezvous" +
              (I.Launcher == "mpi"
                   ? " (or a dsrun built with MPI, which broadcasts it)"
                   : "");
      return std::nullopt;
    }
    I.MasterAddr = env("MASTER_ADDR");
    if (!toInt(env("MASTER_PORT"), I.MasterPort) || I.MasterPort > 65535) {
      Error = "MASTER_PORT is not a port number";
      return std::nullopt;
    }
  }
  // torchrun's agent store: one key per run and restart, so that a
  // restarted job never reads the id of the attempt before it.
  const char *Agent = env("TORCHELASTIC_USE_AGENT_STORE");
  if (I.Launcher == "torchrun" && Agent &&
      (std::string(Agent) == "True" || std::string(Agent) == "1")) {
    I.AgentStore = true;
    I.StoreKey = std::string("dsrun/") +
                 (env("TORCHELASTIC_RUN_ID") ? env("TORCHELASTIC_RUN_ID")
                                             : "none") +
                 "/attempt_" +
                 (env("TORCHELASTIC_RESTART_COUNT")
                      ? env("TORCHELASTIC_RESTART_COUNT")
                      : "0") +
                 "/nccl_id";
  }
  return I;
}

int startChild(const std::vector<std::string> &Argv,
               const std::vector<std::pair<std::string, std::string>> &Env,
               int Stdin, const char *Program) {
  pid_t Launcher = getpid();
  pid_t Pid = fork();
  if (Pid < 0) {
    perror("dsrun: fork");
    return -1;
  }
  if (Pid) {
    return Pid;
  }
  signal(SIGTERM, SIG_DFL); // the launcher's forwarding is not the child's
  signal(SIGINT, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != Launcher)
    _exit(1);
  // Stdin may already be fd 0 (this process had none): then it only
  // loses its close-on-exec.
  if (Stdin == STDIN_FILENO)
    fcntl(STDIN_FILENO, F_SETFD, 0);
  else if (Stdin >= 0)
    dup2(Stdin, STDIN_FILENO);
  for (const auto &[Key, Value] : Env)
    setenv(Key.c_str(), Value.c_str(), 1);
  std::vector<char *> Args;
  for (const std::string &A : Argv)
    Args.push_back(const_cast<char *>(A.c_str()));
  Args.push_back(nullptr);
  if (Program)
    execv(Program, Args.data());
  else
    execvp(Args[0], Args.data());
  fprintf(stderr, "dsrun: cannot run %s: %s\n", Program ? Program : Args[0],
          strerror(errno));
  _exit(127);
}

int launchLocal(int N, const std::vector<std::string> &Argv,
                const NodePlace &Place) {
  // Read by the signal handler that passes a stop on (Preemption.h).
  static std::vector<int> Children;
  // The hostfile launcher ended the job: the ranks killed need no words.
  static std::atomic<bool> Ended{false};
  Children.assign(size_t(N), 0);
  forwardStopSignals(Children.data(), N);
  bool Controlled = env("DSRUN_NODE_CONTROL");
  unsetenv("DSRUN_NODE_CONTROL");
  for (int R = 0; R < N; ++R) {
    int Pid = startChild(Argv,
                         {{"RANK", std::to_string(Place.NodeRank * N + R)},
                          {"LOCAL_RANK", std::to_string(R)},
                          {"WORLD_SIZE", std::to_string(Place.Nodes * N)},
                          {"LOCAL_WORLD_SIZE", std::to_string(N)},
                          {"GROUP_RANK", std::to_string(Place.NodeRank)},
                          {"MASTER_ADDR", Place.MasterAddr},
                          {"MASTER_PORT", std::to_string(Place.MasterPort)},
                          {"DSRUN_CHILD", "1"}},
                         -1, "/proc/self/exe");
    if (Pid < 0)
      return 1;
    Children[size_t(R)] = Pid;
  }
  if (Controlled) {
    // The hostfile launcher's pipe (NodeLaunch.h): 'T' passes a stop on
    // as a SIGTERM here would; its end means the job is over, failed or
    // abandoned. Started once every rank is, it kills the pids it was
    // given (the main thread clears its own slots as it reaps).
    std::thread([Ranks = std::vector<int>(Children)] {
      char C = 0;
      ssize_t Got;
      while ((Got = read(STDIN_FILENO, &C, 1)) == 1 ||
             (Got < 0 && errno == EINTR))
        if (Got == 1 && C == 'T')
          kill(getpid(), SIGTERM);
      Ended = true;
      for (int Rank : Ranks)
        kill(Rank, SIGKILL);
    }).detach();
  }
  // A signal that came while the ranks were being started reaches them
  // now.
  if (stopSignal())
    for (int Child : Children)
      kill(Child, SIGTERM);
  int Status = 0;
  size_t Running = Children.size();
  while (Running) {
    // Which child ended, left unreaped until its slot is cleared, so that
    // the signal handler never signals a pid the system may reuse.
    siginfo_t Info{};
    if (waitid(P_ALL, 0, &Info, WEXITED | WNOWAIT) != 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    pid_t Pid = Info.si_pid;
    size_t R = 0;
    while (R < Children.size() && Children[R] != Pid)
      ++R;
    if (R < Children.size())
      Children[R] = 0;
    int S = 0;
    waitpid(Pid, &S, 0);
    if (R == Children.size())
      continue;
    --Running;
    int Code = WIFEXITED(S) ? WEXITSTATUS(S) : 128 + WTERMSIG(S);
    if (!Code || Status)
      continue;
    Status = Code;
    // A rank that stopped on a signal (another process signalled it, or
    // the launcher did): the others stop on their own, each saving first.
    if (stopSignal() || Code == ExitStopped || Code == ExitTermTimeout ||
        Ended)
      continue;
    // A rank that failed ends the job: the others cannot go on without
    // it, and a rank waiting in a collective would wait for --timeout.
    fprintf(stderr,
            "dsrun: rank %d exited with status %d; stopping the other "
            "ranks\n",
            Place.NodeRank * N + int(R), Code);
    for (int Other : Children)
      if (Other > 0)
        kill(Other, SIGKILL);
  }
  return Status;
}

bool exchangeBlob(const ProcessInfo &Info, std::string &Blob,
                  int TimeoutSeconds, std::string &Error) {
  if (Info.WorldSize == 1)
    return true;
#ifdef DSRUN_HAVE_MPI
  if (Info.Mpi)
    return broadcastByMpi(Info, Blob, Error);
#endif
  auto Deadline = std::chrono::steady_clock::now() +
                  std::chrono::seconds(TimeoutSeconds);
  if (Info.AgentStore) {
    TcpStoreClient Store;
    bool OK = Store.connect(Info.MasterAddr, Info.MasterPort, Deadline, Error) &&
              (Info.Rank == 0 ? Store.set(Info.StoreKey, Blob, Error)
                              : Store.get(Info.StoreKey, Blob, Deadline, Error));
    if (!OK)
      Error = "rank " + std::to_string(Info.Rank) + ", torchrun's agent "
              "store: " + Error;
    return OK;
  }
  auto MsLeft = [&] {
    return int(std::chrono::duration_cast<std::chrono::milliseconds>(
                   Deadline - std::chrono::steady_clock::now())
                   .count());
  };
  bool OK = false;
  if (Info.Rank == 0) {
    int Listen = socket(AF_INET, SOCK_STREAM, 0);
    int One = 1;
    setsockopt(Listen, SOL_SOCKET, SO_REUSEADDR, &One, sizeof(One));
    sockaddr_in Any{};
    Any.sin_family = AF_INET;
    Any.sin_port = htons(uint16_t(Info.MasterPort));
    Any.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(Listen, reinterpret_cast<sockaddr *>(&Any), sizeof(Any)) != 0 ||
        listen(Listen, 128) != 0) {
      Error = "rank 0 cannot listen on port " +
              std::to_string(Info.MasterPort) + ": " + strerror(errno);
    } else {
      int Served = 0;
      while (Served < Info.WorldSize - 1) {
        int Left = MsLeft();
        pollfd Poll{Listen, POLLIN, 0};
        if (Left <= 0 || poll(&Poll, 1, Left) <= 0)
          break;
        int Peer = accept(Listen, nullptr, nullptr);
        if (Peer < 0)
          continue;
        uint32_t Size = htonl(uint32_t(Blob.size()));
        if (sendAll(Peer, &Size, 4) && sendAll(Peer, Blob.data(), Blob.size()))
          ++Served;
        close(Peer);
      }
      OK = Served == Info.WorldSize - 1;
      if (!OK)
        Error = "rank 0 heard from " + std::to_string(Served) + " of " +
                std::to_string(Info.WorldSize - 1) + " ranks within " +
                std::to_string(TimeoutSeconds) + " s";
    }
    close(Listen);
  } else {
    std::string Why;
    while (!OK && MsLeft() > 0) {
      // Rank 0 may not listen yet: short tries until the deadline.
      int Fd = connectTo(Info.MasterAddr, Info.MasterPort,
                         std::min(MsLeft(), 1000), Why);
      if (Fd == Unresolved) {
        Error = "cannot resolve MASTER_ADDR " + Info.MasterAddr;
        return false;
      }
      if (Fd >= 0) {
        uint32_t Size = 0;
        if (receiveAll(Fd, &Size, 4, MsLeft())) {
          Blob.resize(ntohl(Size));
          OK = receiveAll(Fd, Blob.data(), Blob.size(), MsLeft());
        }
        close(Fd);
      }
      if (!OK)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!OK)
      Error = "rank " + std::to_string(Info.Rank) + " could not reach rank 0 "
              "at " + Info.MasterAddr + ":" + std::to_string(Info.MasterPort) +
              " within " + std::to_string(TimeoutSeconds) + " s";
  }
  return OK;
}

} // namespace dsrun
