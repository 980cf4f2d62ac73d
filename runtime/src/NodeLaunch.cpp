//===- NodeLaunch.cpp -----------------------------------------------------===//

#include "NodeLaunch.h"
#include "Numbers.h"
#include "Preemption.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <random>
#include <sstream>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace dsrun {

namespace {

/// How one node, or the whole job under mpirun, is started.
struct Start {
  std::string Name; ///< For messages: "node 1 (worker-2)", "mpirun".
  std::vector<std::string> Argv;
  /// Set in the child before exec (forked agents; ssh and mpirun carry
  /// theirs on the command line).
  std::vector<std::pair<std::string, std::string>> Env;
  pid_t Pid = 0;
  int Control = -1; ///< The write end of the agent's stdin.
  bool Mpirun = false;
};

std::string selfPath() {
  char Buf[4096];
  ssize_t N = readlink("/proc/self/exe", Buf, sizeof(Buf) - 1);
  return N > 0 ? std::string(Buf, size_t(N)) : std::string("dsrun");
}

bool onPath(const std::string &Program) {
  const char *Path = getenv("PATH");
  std::stringstream Dirs(Path ? Path : "");
  std::string Dir;
  while (std::getline(Dirs, Dir, ':'))
    if (!Dir.empty() && access((Dir + "/" + Program).c_str(), X_OK) == 0)
      return true;
  return false;
}

/// What every node gets from this environment, as DeepSpeed's launcher
/// exports it: NCCL_*, UCX_*, DSRUN_* and .deepspeed_env's lines.
std::vector<std::pair<std::string, std::string>> exports(std::string &Error) {
  std::vector<std::pair<std::string, std::string>> Out;
  for (char **E = environ; *E; ++E) {
    std::string V = *E;
    size_t Eq = V.find('=');
    std::string Key = V.substr(0, Eq);
    bool Ours = Key == "DSRUN_CHILD" || Key == "DSRUN_NODE_CONTROL";
    if (Eq != std::string::npos && !Ours &&
        (!Key.rfind("NCCL_", 0) || !Key.rfind("UCX_", 0) ||
         !Key.rfind("DSRUN_", 0)))
      Out.push_back({Key, V.substr(Eq + 1)});
  }
  // DeepSpeed joins the name to the home and the working directory; an
  // absolute name is the one file.
  const char *Name = getenv("DS_ENV_FILE");
  std::string File = Name && *Name ? Name : ".deepspeed_env";
  const char *Home = getenv("HOME");
  std::vector<std::string> Paths;
  if (File[0] == '/')
    Paths = {File};
  else
    Paths = {Home && *Home ? std::string(Home) + "/" + File : "", "./" + File};
  for (const std::string &Path : Paths) {
    if (Path.empty())
      continue;
    std::ifstream In(Path);
    std::string Line;
    for (int L = 1; In && std::getline(In, Line); ++L) {
      auto Trim = [](const std::string &T) {
        size_t B = T.find_first_not_of(" \t\r");
        return B == std::string::npos
                   ? std::string()
                   : T.substr(B, T.find_last_not_of(" \t\r") - B + 1);
      };
      if (Trim(Line).empty())
        continue;
      size_t Eq = Line.find('=');
      std::string Key = Trim(Line.substr(0, Eq));
      if (Eq == std::string::npos || Key.empty()) {
        Error = Path + ":" + std::to_string(L) + ": '" + Line +
                "' is not KEY=VALUE";
        return {};
      }
      Out.push_back({Key, Trim(Line.substr(Eq + 1))});
    }
  }
  return Out;
}

volatile sig_atomic_t Signals = 0;

void onSignal(int) { Signals = Signals + 1; }

bool startProcess(Start &S, bool Agent) {
  int Pipe[2];
  if (pipe2(Pipe, O_CLOEXEC) != 0) {
    perror("dsrun: pipe");
    return false;
  }
  std::vector<std::pair<std::string, std::string>> Env = S.Env;
  if (Agent)
    Env.push_back({"DSRUN_NODE_CONTROL", "1"});
  int Pid = startChild(S.Argv, Env, Pipe[0]);
  close(Pipe[0]);
  if (Pid < 0) {
    close(Pipe[1]);
    return false;
  }
  S.Pid = Pid;
  S.Control = Pipe[1];
  return true;
}

void closeControl(Start &S) {
  if (S.Control >= 0)
    close(S.Control);
  S.Control = -1;
}

/// Starts every process, passes stop signals on, and stops all when one
/// fails. Returns the first status other than 0.
int run(std::vector<Start> &Starts) {
  struct sigaction A {};
  A.sa_handler = onSignal;
  sigemptyset(&A.sa_mask);
  A.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &A, nullptr);
  sigaction(SIGINT, &A, nullptr);
  // A node whose agent ended must not kill the launcher with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  int Running = 0;
  for (Start &S : Starts) {
    if (!startProcess(S, !S.Mpirun))
      break;
    ++Running;
  }
  int Status = Running == int(Starts.size()) ? 0 : 1;
  if (Status)
    for (Start &S : Starts)
      closeControl(S);
  int Seen = 0;
  while (Running) {
    if (Signals > Seen) {
      Seen = Signals;
      for (Start &S : Starts) {
        if (!S.Pid)
          continue;
        if (S.Mpirun)
          kill(S.Pid, SIGTERM);
        else if (S.Control >= 0 && write(S.Control, "T", 1) != 1)
          closeControl(S);
      }
    }
    int S = 0;
    pid_t Pid = waitpid(-1, &S, WNOHANG);
    if (Pid == 0 || (Pid < 0 && errno == EINTR)) {
      usleep(20000);
      continue;
    }
    if (Pid < 0)
      break;
    Start *Ended = nullptr;
    for (Start &X : Starts)
      if (X.Pid == Pid)
        Ended = &X;
    if (!Ended)
      continue;
    Ended->Pid = 0;
    closeControl(*Ended);
    --Running;
    int Code = WIFEXITED(S) ? WEXITSTATUS(S) : 128 + WTERMSIG(S);
    if (!Code || Status)
      continue;
    Status = Code;
    if (Seen || Code == ExitStopped || Code == ExitTermTimeout)
      continue;
    bool Ssh = Ended->Argv[0] == "ssh";
    fprintf(stderr, "dsrun: %s exited with status %d%s; stopping the other "
                    "nodes\n",
            Ended->Name.c_str(), Code,
            Ssh && Code == 255 ? " (ssh's own status: is the host reachable "
                                 "with ssh -o BatchMode=yes?)"
                               : "");
    for (Start &X : Starts)
      closeControl(X);
  }
  return Status;
}

} // namespace

bool takeLaunchFlags(std::vector<std::string> &Args, LaunchRequest &R,
                     std::string &Error) {
  NodeLaunchOptions &H = R.Hostfile;
  std::vector<std::string> Kept;
  std::string NeedHostfile;
  long Nodes = 0, NodeRank = -1;
  bool PortGiven = false;
  for (size_t I = 0; I < Args.size(); ++I) {
    const std::string &A = Args[I];
    bool Known = A == "-n" || A == "--nodes" || A == "--node-rank" ||
                 A == "--hostfile" || A == "--num-nodes" ||
                 A == "--num-gpus" || A == "--include" || A == "--exclude" ||
                 A == "--launcher" || A == "--master-addr" ||
                 A == "--master-port" || A == "--ssh-port";
    if (I == 0 || (!Known && A != "--show-launch")) {
      Kept.push_back(A);
      continue;
    }
    if (A != "-n" && A != "--nodes" && A != "--node-rank" && A != "--hostfile")
      NeedHostfile = A;
    if (A == "--show-launch") {
      H.Show = true;
      continue;
    }
    if (I + 1 >= Args.size()) {
      Error = A + " needs a value";
      return false;
    }
    const std::string &V = Args[++I];
    long N = 0;
    auto Need = [&](long Min, long Max, const char *What) {
      if (parseCount(V, Min, Max, N))
        return true;
      Error = A + " needs " + What + ", not '" + V + "'";
      return false;
    };
    if (A == "-n") {
      if (!Need(1, 64, "a process count from 1 to 64"))
        return false;
      R.Processes = int(N);
    } else if (A == "--nodes") {
      if (!Need(1, 1 << 16, "a count of nodes"))
        return false;
      Nodes = N;
    } else if (A == "--node-rank") {
      if (!Need(0, 1 << 16, "this node's number from 0"))
        return false;
      NodeRank = N;
    } else if (A == "--num-nodes" || A == "--num-gpus") {
      if (!Need(1, 1 << 16, "a positive count"))
        return false;
      (A == "--num-nodes" ? H.Filter.NumNodes : H.Filter.NumGpus) = int(N);
    } else if (A == "--master-port" || A == "--ssh-port") {
      if (!Need(1, 65535, "a port number"))
        return false;
      (A == "--master-port" ? H.MasterPort : H.SshPort) = int(N);
      PortGiven = PortGiven || A == "--master-port";
    } else {
      (A == "--hostfile"  ? H.Hostfile
       : A == "--include" ? H.Filter.Include
       : A == "--exclude" ? H.Filter.Exclude
       : A == "--launcher" ? H.Launcher
                           : H.MasterAddr) = V;
    }
  }
  Args = Kept;
  if (H.Launcher != "auto" && H.Launcher != "ssh" && H.Launcher != "mpirun") {
    Error = "--launcher is auto, ssh or mpirun, not '" + H.Launcher + "'";
    return false;
  }
  if (!H.Hostfile.empty() && (R.Processes || Nodes || NodeRank >= 0)) {
    Error = "--hostfile starts the ranks of every node itself; -n, --nodes "
            "and --node-rank start one node's by hand";
    return false;
  }
  if (H.Hostfile.empty() && !NeedHostfile.empty()) {
    Error = NeedHostfile + " goes with --hostfile FILE";
    return false;
  }
  if ((Nodes || NodeRank >= 0) && !R.Processes) {
    Error = "--nodes and --node-rank go with -n, the ranks of this node";
    return false;
  }
  // MASTER_PORT where no flag gives the port: a number, or an error.
  int EnvPort = 0;
  if (const char *Port = getenv("MASTER_PORT"); Port && *Port) {
    long P = 0;
    if (!parseCount(Port, 1, 65535, P)) {
      Error = std::string("MASTER_PORT is '") + Port + "', not a port number";
      return false;
    }
    EnvPort = int(P);
  }
  if (!H.Hostfile.empty() && !PortGiven && EnvPort)
    H.MasterPort = EnvPort;
  if (!R.Processes)
    return true;
  R.Place.Nodes = int(Nodes ? Nodes : 1);
  R.Place.NodeRank = int(NodeRank < 0 ? 0 : NodeRank);
  if (R.Place.NodeRank >= R.Place.Nodes) {
    Error = "--node-rank " + std::to_string(R.Place.NodeRank) +
            " is not below --nodes " + std::to_string(R.Place.Nodes);
    return false;
  }
  const char *Addr = getenv("MASTER_ADDR");
  if (R.Place.Nodes > 1) {
    if (!Addr || !*Addr) {
      Error = "--nodes " + std::to_string(R.Place.Nodes) +
              " needs MASTER_ADDR: the host of node 0, where rank 0 listens";
      return false;
    }
    R.Place.MasterAddr = Addr;
    R.Place.MasterPort = 29500;
  } else {
    // A port of its own, so that two jobs on one machine do not meet.
    R.Place.MasterPort = 29500 + int(std::random_device()() % 2000);
  }
  if (EnvPort)
    R.Place.MasterPort = EnvPort;
  return true;
}

std::string shellQuote(const std::string &Word) {
  if (!Word.empty() &&
      Word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                             "VWXYZ0123456789_-./=:,@%+") == std::string::npos)
    return Word;
  std::string Q = "'";
  for (char C : Word)
    Q += C == '\'' ? std::string("'\\''") : std::string(1, C);
  return Q + "'";
}

bool isThisMachine(const std::string &Host) {
  if (Host == "localhost" || Host == "::1" || Host.rfind("127.", 0) == 0)
    return true;
  char Name[256] = {};
  if (gethostname(Name, sizeof(Name) - 1) == 0 &&
      (Host == Name ||
       Host == std::string(Name).substr(0, std::string(Name).find('.'))))
    return true;
  addrinfo Hints{}, *Found = nullptr;
  Hints.ai_family = AF_INET;
  if (getaddrinfo(Host.c_str(), nullptr, &Hints, &Found) != 0)
    return false;
  ifaddrs *Interfaces = nullptr;
  bool Local = false;
  if (getifaddrs(&Interfaces) == 0) {
    for (addrinfo *F = Found; F && !Local; F = F->ai_next) {
      auto *Want = reinterpret_cast<sockaddr_in *>(F->ai_addr);
      if ((ntohl(Want->sin_addr.s_addr) >> 24) == 127)
        Local = true;
      for (ifaddrs *I = Interfaces; I && !Local; I = I->ifa_next)
        Local = I->ifa_addr && I->ifa_addr->sa_family == AF_INET &&
                reinterpret_cast<sockaddr_in *>(I->ifa_addr)->sin_addr.s_addr ==
                    Want->sin_addr.s_addr;
    }
    freeifaddrs(Interfaces);
  }
  freeaddrinfo(Found);
  return Local;
}

int launchNodes(const NodeLaunchOptions &O, unsigned PlanNodes,
                unsigned PlanGpusPerNode, const std::vector<std::string> &Args) {
  std::ifstream In(O.Hostfile);
  if (!In) {
    fprintf(stderr, "dsrun: cannot read the hostfile %s: %s\n",
            O.Hostfile.c_str(), strerror(errno));
    return 2;
  }
  std::stringstream Text;
  Text << In.rdbuf();
  std::string Error;
  auto Hosts = parseHostfile(Text.str(), O.Hostfile, Error);
  auto Nodes = Hosts ? selectNodes(*Hosts, O.Filter, Error) : std::nullopt;
  if (!Nodes) {
    fprintf(stderr, "dsrun: %s\n", Error.c_str());
    return 2;
  }
  if (!PlanNodes) {
    // No plan: every node runs as many ranks as the first.
    PlanNodes = unsigned(Nodes->size());
    PlanGpusPerNode = unsigned((*Nodes)[0].Gpus.size());
    for (const LaunchNode &N : *Nodes)
      if (N.Gpus.size() != PlanGpusPerNode) {
        fprintf(stderr, "dsrun: %s has %zu GPU(s) and %s %u: every node "
                        "runs as many ranks\n",
                N.Host.c_str(), N.Gpus.size(), (*Nodes)[0].Host.c_str(),
                PlanGpusPerNode);
        return 2;
      }
  }
  if (!matchesPlan(*Nodes, PlanNodes, PlanGpusPerNode, Error)) {
    fprintf(stderr, "dsrun: %s\n", Error.c_str());
    return 1;
  }
  size_t N = Nodes->size(), G = PlanGpusPerNode;
  std::vector<bool> Local(N);
  std::vector<size_t> LocalNodes;
  bool Remote = false, PerNodeGpus = false;
  for (size_t I = 0; I < N; ++I) {
    Local[I] = isThisMachine((*Nodes)[I].Host);
    Remote = Remote || !Local[I];
    if (Local[I])
      LocalNodes.push_back(I);
    for (size_t R = 0; R < G; ++R)
      PerNodeGpus = PerNodeGpus || (*Nodes)[I].Gpus[R] != int(R);
  }
  // Two entries that are this machine: two nodes, each on its own GPUs.
  bool Simulated = LocalNodes.size() > 1;
  for (size_t A = 0; A < LocalNodes.size(); ++A)
    for (size_t B = A + 1; B < LocalNodes.size(); ++B)
      for (int Gpu : (*Nodes)[LocalNodes[A]].Gpus)
        for (int Other : (*Nodes)[LocalNodes[B]].Gpus)
          if (Gpu == Other) {
            const std::string &H1 = (*Nodes)[LocalNodes[A]].Host,
                              &H2 = (*Nodes)[LocalNodes[B]].Host;
            fprintf(stderr,
                    "dsrun: %s and %s are both this machine and both take "
                    "GPU %d: give each node its own GPUs with --include "
                    "(%s:0,1@%s:2,3 for two nodes of 2)\n",
                    H1.c_str(), H2.c_str(), Gpu, H1.c_str(), H2.c_str());
            return 2;
          }

  std::string How = O.Launcher;
  if (How == "mpirun" && (PerNodeGpus || Simulated)) {
    fprintf(stderr, "dsrun: --launcher mpirun gives every node the same "
                    "environment, so it cannot run %s; use --launcher ssh\n",
            Simulated ? "two nodes on this machine"
                      : "nodes on GPUs other than 0..G-1 (--include, "
                        "--exclude)");
    return 2;
  }
  if (How == "auto")
    How =
        !Remote ? "local"
        : !PerNodeGpus && !Simulated && onPath("mpirun") && onPath("ompi_info")
            ? "mpirun"
            : "ssh";

  std::string Master = O.MasterAddr;
  if (Master.empty()) {
    Master = (*Nodes)[0].Host;
    // A loopback name does not reach this machine from the others.
    char Name[256] = {};
    if (Remote && Local[0] && gethostname(Name, sizeof(Name) - 1) == 0)
      Master = Name;
  }
  std::vector<std::pair<std::string, std::string>> Exported = exports(Error);
  if (!Error.empty()) {
    fprintf(stderr, "dsrun: %s\n", Error.c_str());
    return 2;
  }
  std::string Self = selfPath();
  char Cwd[4096] = {};
  if (!getcwd(Cwd, sizeof(Cwd) - 1))
    strcpy(Cwd, ".");

  unsigned World = unsigned(N * G);
  for (size_t I = 0; I < N; ++I) {
    const LaunchNode &Node = (*Nodes)[I];
    unsigned First = unsigned(I * G);
    printf("dsrun: node %zu: %s, ranks %u-%u on GPUs %s%s\n", I,
           Node.Host.c_str(), First, First + unsigned(G) - 1,
           gpuList(Node.Gpus).c_str(), Local[I] ? " (this machine)" : "");
  }
  printf("dsrun: %u ranks started %s; rank 0 at %s:%d\n", World,
         How == "local"    ? "on this machine"
         : How == "mpirun" ? "by mpirun"
                           : "through ssh",
         Master.c_str(), O.MasterPort);
  if (Simulated)
    printf("dsrun: note: the nodes on this machine get NCCL host ids of "
           "their own (NCCL_HOSTID), so NCCL carries the traffic between "
           "them over its network transport, as between machines\n");

  std::vector<Start> Starts;
  if (How == "mpirun") {
    Start S;
    S.Name = "mpirun";
    S.Mpirun = true;
    std::string HostList;
    for (const LaunchNode &Node : *Nodes)
      HostList += (HostList.empty() ? "" : ",") + Node.Host + ":" +
                  std::to_string(G);
    S.Argv = {"mpirun", "-n", std::to_string(World), "--host", HostList,
              "-x", "MASTER_ADDR=" + Master,
              "-x", "MASTER_PORT=" + std::to_string(O.MasterPort)};
    for (const auto &[Key, Value] : Exported)
      S.Argv.insert(S.Argv.end(), {"-x", Key + "=" + Value});
    S.Argv.push_back(Self);
    S.Argv.insert(S.Argv.end(), Args.begin() + 1, Args.end());
    Starts.push_back(S);
  } else {
    for (size_t I = 0; I < N; ++I) {
      const LaunchNode &Node = (*Nodes)[I];
      Start S;
      S.Name = "node " + std::to_string(I) + " (" + Node.Host + ")";
      std::vector<std::string> Agent = {
          Self, "-n", std::to_string(G), "--nodes", std::to_string(N),
          "--node-rank", std::to_string(I)};
      Agent.insert(Agent.end(), Args.begin() + 1, Args.end());
      std::vector<std::pair<std::string, std::string>> Env = {
          {"MASTER_ADDR", Master},
          {"MASTER_PORT", std::to_string(O.MasterPort)},
          {"CUDA_VISIBLE_DEVICES", ""}};
      for (int Gpu : Node.Gpus)
        Env[2].second += (Env[2].second.empty() ? "" : ",") +
                         std::to_string(Gpu);
      if (Simulated && Local[I])
        Env.push_back({"NCCL_HOSTID", "dsrun-node-" + std::to_string(I)});
      Env.insert(Env.begin(), Exported.begin(), Exported.end());
      if (Local[I]) {
        S.Argv = Agent;
        S.Env = Env;
      } else {
        std::string Command = "cd " + shellQuote(Cwd) + " && exec env";
        Env.push_back({"DSRUN_NODE_CONTROL", "1"});
        for (const auto &[Key, Value] : Env)
          Command += " " + shellQuote(Key + "=" + Value);
        for (const std::string &A : Agent)
          Command += " " + shellQuote(A);
        S.Argv = {"ssh", "-o", "BatchMode=yes"};
        if (O.SshPort)
          S.Argv.insert(S.Argv.end(), {"-p", std::to_string(O.SshPort)});
        S.Argv.insert(S.Argv.end(), {Node.Host, Command});
      }
      Starts.push_back(S);
    }
  }
  if (O.Show) {
    for (const Start &S : Starts) {
      std::string Line;
      for (const auto &[Key, Value] : S.Env)
        Line += shellQuote(Key + "=" + Value) + " ";
      for (const std::string &A : S.Argv)
        Line += (&A == &S.Argv[0] ? "" : " ") + shellQuote(A);
      printf("dsrun: %s: %s\n", S.Name.c_str(), Line.c_str());
    }
    return 0;
  }
  fflush(stdout);
  return run(Starts);
}

} // namespace dsrun
