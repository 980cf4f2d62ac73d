//===- Hostfile.cpp -------------------------------------------------------===//

#include "Hostfile.h"
#include "Numbers.h"

#include <map>
#include <set>
#include <sstream>

namespace dsrun {

namespace {

std::string trim(const std::string &S) {
  size_t B = S.find_first_not_of(" \t\r");
  if (B == std::string::npos)
    return "";
  return S.substr(B, S.find_last_not_of(" \t\r") - B + 1);
}

bool count(const std::string &Text, int Max, int &Out) {
  long V = 0;
  if (!parseCount(Text, 0, Max, V))
    return false;
  Out = int(V);
  return true;
}

/// One NAME[:SLOT[,SLOT...]] of an --include or --exclude.
struct NodeSpec {
  std::string Host;
  std::vector<int> Slots; ///< Empty: the whole host.
};

std::optional<std::vector<NodeSpec>> parseSpecs(const std::string &Flag,
                                                const std::string &Text,
                                                std::string &Error) {
  std::vector<NodeSpec> Specs;
  std::stringstream Nodes(Text);
  std::string Node;
  while (std::getline(Nodes, Node, '@')) {
    NodeSpec S;
    size_t Colon = Node.find(':');
    S.Host = Node.substr(0, Colon);
    bool Bad = S.Host.empty() || (Colon != std::string::npos &&
                                  Node.find(':', Colon + 1) != std::string::npos);
    if (!Bad && Colon != std::string::npos) {
      std::stringstream Slots(Node.substr(Colon + 1));
      std::string Slot;
      while (!Bad && std::getline(Slots, Slot, ',')) {
        int V = 0;
        Bad = !count(Slot, 1 << 16, V);
        S.Slots.push_back(V);
      }
      Bad = Bad || S.Slots.empty() || Node.back() == ',';
    }
    if (Bad) {
      Error = Flag + " '" + Text + "': '" + Node +
              "' is not NAME or NAME:SLOT[,SLOT...] (nodes joined by @)";
      return std::nullopt;
    }
    Specs.push_back(S);
  }
  if (Specs.empty() || Text.back() == '@') {
    Error = Flag + " '" + Text + "' names no node";
    return std::nullopt;
  }
  return Specs;
}

} // namespace

std::optional<std::vector<HostEntry>>
parseHostfile(const std::string &Text, const std::string &Path,
              std::string &Error) {
  std::vector<HostEntry> Hosts;
  std::stringstream In(Text);
  std::string Raw;
  for (int Line = 1; std::getline(In, Raw); ++Line) {
    std::string L = trim(Raw);
    if (L.empty() || L[0] == '#')
      continue;
    // HOST slots=N, then at most a comment.
    std::string Where = Path + ":" + std::to_string(Line) + ": ";
    size_t Space = L.find_first_of(" \t");
    std::string Rest = Space == std::string::npos ? "" : trim(L.substr(Space));
    size_t Hash = Rest.find('#');
    if (Hash != std::string::npos)
      Rest = trim(Rest.substr(0, Hash));
    HostEntry E{L.substr(0, Space), 0, Line};
    if (Rest.compare(0, 6, "slots=") != 0 ||
        !count(Rest.substr(6), 1 << 16, E.Slots)) {
      Error = Where + "'" + L + "' is not 'HOST slots=N'";
      return std::nullopt;
    }
    if (E.Host[0] == '-') {
      Error = Where + "'" + E.Host + "' starts with '-': not a host name";
      return std::nullopt;
    }
    if (E.Slots == 0) {
      Error = Where + E.Host + " has slots=0: a node needs a GPU";
      return std::nullopt;
    }
    for (const HostEntry &Seen : Hosts)
      if (Seen.Host == E.Host) {
        Error = Where + E.Host + " is listed again (first at line " +
                std::to_string(Seen.Line) + ")";
        return std::nullopt;
      }
    Hosts.push_back(E);
  }
  if (Hosts.empty()) {
    Error = Path + ": no hosts (lines 'HOST slots=N')";
    return std::nullopt;
  }
  return Hosts;
}

std::optional<std::vector<LaunchNode>>
selectNodes(const std::vector<HostEntry> &Hosts, const HostFilter &F,
            std::string &Error) {
  if (!F.Include.empty() && !F.Exclude.empty()) {
    Error = "--include and --exclude cannot be given together";
    return std::nullopt;
  }
  if ((F.NumNodes >= 0 || F.NumGpus >= 0) &&
      (!F.Include.empty() || !F.Exclude.empty())) {
    Error = "--num-nodes and --num-gpus cannot be given with --include or "
            "--exclude";
    return std::nullopt;
  }
  std::map<std::string, int> SlotsOf;
  for (const HostEntry &H : Hosts)
    SlotsOf[H.Host] = H.Slots;
  // Every host's GPUs, then the filter.
  std::map<std::string, std::vector<int>> Chosen;
  for (const HostEntry &H : Hosts)
    for (int G = 0; G < H.Slots; ++G)
      Chosen[H.Host].push_back(G);
  const std::string &Spec = F.Include.empty() ? F.Exclude : F.Include;
  if (!Spec.empty()) {
    std::string Flag = F.Include.empty() ? "--exclude" : "--include";
    auto Specs = parseSpecs(Flag, Spec, Error);
    if (!Specs)
      return std::nullopt;
    // Per host named: the union of the slots listed, or the whole host
    // where only bare names name it (DeepSpeed's parse_node_config_list).
    struct Named {
      bool Whole = false;
      std::set<int> Slots;
    };
    std::map<std::string, Named> Of;
    for (const NodeSpec &S : *Specs) {
      auto It = SlotsOf.find(S.Host);
      if (It == SlotsOf.end()) {
        Error = Flag + ": host '" + S.Host + "' is not in the hostfile";
        return std::nullopt;
      }
      for (int Slot : S.Slots)
        if (Slot >= It->second) {
          Error = Flag + ": " + S.Host + " has no slot " +
                  std::to_string(Slot) + " (slots=" +
                  std::to_string(It->second) + ")";
          return std::nullopt;
        }
      Named &N = Of[S.Host];
      N.Slots.insert(S.Slots.begin(), S.Slots.end());
      N.Whole = N.Slots.empty();
    }
    bool Include = !F.Include.empty();
    for (auto &[Host, Gpus] : Chosen) {
      auto It = Of.find(Host);
      std::vector<int> Kept;
      for (int G : Gpus) {
        bool Listed = It != Of.end() &&
                      (It->second.Whole || It->second.Slots.count(G));
        if (Listed == Include)
          Kept.push_back(G);
      }
      Gpus = Kept;
    }
  }
  std::vector<LaunchNode> Nodes;
  for (const HostEntry &H : Hosts)
    if (!Chosen[H.Host].empty())
      Nodes.push_back({H.Host, Chosen[H.Host]});
  if (F.NumNodes == 0 || F.NumGpus == 0) {
    Error = F.NumNodes == 0 ? "--num-nodes must be at least 1"
                            : "--num-gpus must be at least 1";
    return std::nullopt;
  }
  if (F.NumNodes > 0) {
    if (size_t(F.NumNodes) > Nodes.size()) {
      Error = "--num-nodes " + std::to_string(F.NumNodes) +
              " but the hostfile has " + std::to_string(Nodes.size()) +
              " host(s)";
      return std::nullopt;
    }
    Nodes.resize(size_t(F.NumNodes));
  }
  if (F.NumGpus > 0)
    for (LaunchNode &N : Nodes) {
      if (size_t(F.NumGpus) > N.Gpus.size()) {
        Error = "--num-gpus " + std::to_string(F.NumGpus) + " but " + N.Host +
                " has slots=" + std::to_string(N.Gpus.size());
        return std::nullopt;
      }
      N.Gpus.resize(size_t(F.NumGpus));
    }
  if (Nodes.empty()) {
    Error = "the hostfile and the filters leave no GPU to run on";
    return std::nullopt;
  }
  return Nodes;
}

bool matchesPlan(const std::vector<LaunchNode> &Nodes, unsigned PlanNodes,
                 unsigned PlanGpusPerNode, std::string &Error) {
  bool Match = Nodes.size() == PlanNodes;
  for (const LaunchNode &N : Nodes)
    Match = Match && N.Gpus.size() == PlanGpusPerNode;
  if (Match)
    return true;
  std::string Have;
  for (const LaunchNode &N : Nodes)
    Have += (Have.empty() ? "" : ", ") + N.Host + " with " +
            std::to_string(N.Gpus.size()) + " GPU(s)";
  Error = "the plan is for " + std::to_string(PlanNodes) + " node(s) of " +
          std::to_string(PlanGpusPerNode) + " GPU(s); the hostfile selects " +
          std::to_string(Nodes.size()) + ": " + Have +
          " (dsc plan --nodes N --gpus-per-node G makes a plan for it)";
  return false;
}

std::string gpuList(const std::vector<int> &Gpus) {
  std::string S;
  for (size_t I = 0; I < Gpus.size();) {
    size_t J = I;
    while (J + 1 < Gpus.size() && Gpus[J + 1] == Gpus[J] + 1)
      ++J;
    S += (S.empty() ? "" : ",") + std::to_string(Gpus[I]);
    if (J > I)
      S += (J == I + 1 ? "," : "-") + std::to_string(Gpus[J]);
    I = J + 1;
  }
  return S;
}

} // namespace dsrun
