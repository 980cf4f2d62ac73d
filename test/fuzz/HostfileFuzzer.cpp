//===- HostfileFuzzer.cpp - libFuzzer target: hostfiles and filters ------===//
//
// Arbitrary text as dsrun --hostfile's file, and after a NUL byte an
// --include or --exclude spec (the first byte of the input picks which,
// and whether --num-nodes/--num-gpus are given instead). Every input is
// parsed or refused with a message; what is selected must be what the
// file allows: hosts of the file in its order, each with GPUs that are
// distinct, ascending and below its slots, none empty.
//
//===----------------------------------------------------------------------===//

#include "Hostfile.h"

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  if (Size == 0)
    return 0;
  uint8_t Mode = Data[0];
  std::string Rest(reinterpret_cast<const char *>(Data) + 1, Size - 1);
  size_t Nul = Rest.find('\0');
  std::string Text = Rest.substr(0, Nul);
  std::string Spec = Nul == std::string::npos ? "" : Rest.substr(Nul + 1);
  std::string Error;
  auto Hosts = dsrun::parseHostfile(Text, "fuzz", Error);
  if (!Hosts) {
    if (Error.empty())
      __builtin_trap();
    return 0;
  }
  dsrun::HostFilter F;
  switch (Mode % 4) {
  case 0:
    F.Include = Spec;
    break;
  case 1:
    F.Exclude = Spec;
    break;
  case 2:
    F.NumNodes = Mode / 4 % 5;
    F.NumGpus = Mode / 20 % 5;
    break;
  default:
    break;
  }
  auto Nodes = dsrun::selectNodes(*Hosts, F, Error);
  if (!Nodes) {
    if (Error.empty())
      __builtin_trap();
    return 0;
  }
  size_t At = 0;
  for (const dsrun::LaunchNode &N : *Nodes) {
    while (At < Hosts->size() && (*Hosts)[At].Host != N.Host)
      ++At;
    if (At == Hosts->size() || N.Gpus.empty())
      __builtin_trap();
    for (size_t I = 0; I < N.Gpus.size(); ++I)
      if (N.Gpus[I] < 0 || N.Gpus[I] >= (*Hosts)[At].Slots ||
          (I && N.Gpus[I] <= N.Gpus[I - 1]))
        __builtin_trap();
    ++At;
  }
  (void)dsrun::matchesPlan(*Nodes, 2, 2, Error);
  return 0;
}
