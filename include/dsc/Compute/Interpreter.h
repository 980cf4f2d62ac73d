//===- Interpreter.h - The compute program on the CPU, in fp32 --*- C++ -*-===//
//
// Runs a graph node by node with the registry's host evaluations: the
// oracle for gradient checks, for the loss and gradients PyTorch computes
// (test/Compute), and for the values dsrun's kernels are tested against.
// Small models only: it computes every product in double, element by
// element.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_COMPUTE_INTERPRETER_H
#define DSC_COMPUTE_INTERPRETER_H

#include "dsc/Compute/Graph.h"

namespace dsc::compute {

class Interpreter {
public:
  explicit Interpreter(const Graph &G);

  /// Sets a parameter, input or target (by value id); its shape must
  /// match.
  llvm::Error set(ValueId V, HostTensor T);
  /// The same, by the value's name.
  llvm::Error set(llvm::StringRef Name, HostTensor T);

  /// Runs every node in order. Seed feeds dropout's masks.
  llvm::Error run(uint64_t Seed = 0);

  /// A value after run(); constants are available before it.
  const HostTensor &value(ValueId V) const;
  bool has(ValueId V) const { return V < Values.size() && Set[V]; }

private:
  const Graph &G;
  std::vector<HostTensor> Values;
  std::vector<bool> Set;
};

} // namespace dsc::compute

#endif
