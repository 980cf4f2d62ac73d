//===- PointwiseFusion.cpp - Chains of pointwise kernels made one ---------===//
//
// The graph's elementwise ops each become a pointwise kernel, and their
// gradients more: a Llama layer's SiLU gradient is six kernels over
// [tokens, intermediate], its rotary embeddings a dozen, each storing a
// value the next one loads again (the Llama 1.1 B on 2 H200s spent 118 of
// its 225 ms step in pointwise kernels). A pointwise kernel whose result
// only one later pointwise kernel reads, element for element, is inlined
// into that reader: the reader loads the producer's inputs and runs both
// programs, and the intermediate value is neither stored nor rounded to
// the training dtype (the fused result rounds once, as torch.compile's
// does).
//
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Kernels.h"
#include "dsc/KernelRegistry.h"
#include "dsc/Pointwise.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <array>
#include <map>

namespace dsc::compute {

namespace {

using plan::KernelKind;
using plan::PointwiseOp;
using plan::TensorRef;
namespace pw = dsc::pointwise;

bool sameView(const TensorRef &A, const TensorRef &B) {
  return A.Value == B.Value && A.Offset == B.Offset && A.Shape == B.Shape &&
         A.Strides == B.Strides;
}

bool reads(const plan::Kernel &K, uint32_t V) {
  return std::any_of(K.Inputs.begin(), K.Inputs.end(),
                     [&](const TensorRef &R) { return R.Value == V; });
}

/// A pointwise program as the fusion rewrites it: registers, instructions
/// (op, dst, a, b, c) and the register of each output.
struct Program {
  int64_t Registers = 0;
  std::vector<std::array<int64_t, 5>> Code;
  std::vector<int64_t> Outputs;

  static Program of(const plan::Kernel &K) {
    const plan::PointwiseAttrs &A = K.attrs<plan::KernelKind::Pointwise>();
    Program P;
    P.Registers = A.Registers;
    for (const plan::PointwiseInstr &X : A.Program)
      P.Code.push_back({int64_t(X.Op), X.Dest, X.A, X.B, X.C});
    P.Outputs.assign(A.Results.begin(), A.Results.end());
    return P;
  }
  plan::PointwiseAttrs attrs(std::vector<double> Constants) const {
    plan::PointwiseAttrs A;
    A.Registers = uint32_t(Registers);
    for (const auto &X : Code)
      A.Program.push_back({PointwiseOp(X[0]), uint32_t(X[1]), uint32_t(X[2]),
                           uint32_t(X[3]), uint32_t(X[4])});
    A.Results.assign(Outputs.begin(), Outputs.end());
    A.Constants = std::move(Constants);
    return A;
  }

  /// Gives every instruction a register of its own, so that none writes
  /// an input's register (which a fused program may share).
  void toSingleAssignment(int64_t NumInputs) {
    std::vector<int64_t> Map(size_t(std::max(Registers, NumInputs)), -1);
    for (int64_t R = 0; R < NumInputs; ++R)
      Map[size_t(R)] = R;
    int64_t Next = NumInputs;
    for (auto &X : Code) {
      for (unsigned A = 0; A < pw::registerArgs(PointwiseOp(X[0])); ++A)
        X[2 + A] = Map[size_t(X[2 + A])];
      X[1] = Map[size_t(X[1])] = Next++;
    }
    for (int64_t &R : Outputs)
      R = Map[size_t(R)];
    Registers = Next;
  }

  /// Renames registers so that each is reused once its value is dead: the
  /// inputs keep the first NumInputs (dsrun loads them there), and fewer
  /// registers keep the kernel's program in the thread's own registers.
  void compact(int64_t NumInputs) {
    // Per instruction J, for each register it reads: whether that read is
    // the value's last (no later read before the register is written
    // again, and not an output).
    size_t N = Code.size();
    std::vector<std::array<bool, 3>> Last(N, {false, false, false});
    std::vector<bool> Live(size_t(Registers), false), Unread(N, false);
    for (int64_t R : Outputs)
      Live[size_t(R)] = true;
    for (size_t J = N; J-- > 0;) {
      auto &X = Code[J];
      Unread[J] = !Live[size_t(X[1])];
      Live[size_t(X[1])] = false;
      unsigned Args = pw::registerArgs(PointwiseOp(X[0]));
      for (unsigned A = 0; A < Args; ++A) {
        Last[J][A] = !Live[size_t(X[2 + A])];
        Live[size_t(X[2 + A])] = true;
      }
      // A register read twice by one instruction dies once.
      for (unsigned A = 0; A < Args; ++A)
        for (unsigned B = A + 1; B < Args; ++B)
          if (X[2 + A] == X[2 + B])
            Last[J][A] = false;
    }
    std::vector<int64_t> Map(size_t(Registers), -1);
    std::vector<bool> Busy;
    auto Take = [&] {
      size_t R = 0;
      while (R < Busy.size() && Busy[R])
        ++R;
      if (R == Busy.size())
        Busy.push_back(false);
      Busy[R] = true;
      return int64_t(R);
    };
    for (int64_t R = 0; R < NumInputs; ++R) {
      Map[size_t(R)] = Take();
      if (!Live[size_t(R)])
        Busy[size_t(R)] = false;
    }
    for (size_t J = 0; J < N; ++J) {
      auto &X = Code[J];
      unsigned Args = pw::registerArgs(PointwiseOp(X[0]));
      for (unsigned A = 0; A < Args; ++A) {
        int64_t Phys = Map[size_t(X[2 + A])];
        if (Last[J][A])
          Busy[size_t(Phys)] = false;
        X[2 + A] = Phys;
      }
      // The destination's old value is dead (it is overwritten) unless
      // this instruction read it, which freed it above if it was its last.
      Map[size_t(X[1])] = Take();
      X[1] = Map[size_t(X[1])];
      if (Unread[J])
        Busy[size_t(X[1])] = false;
    }
    for (int64_t &R : Outputs)
      R = Map[size_t(R)];
    Registers = std::max<int64_t>(int64_t(Busy.size()), NumInputs);
  }
};

/// Producer's program inlined into Consumer's, in place of Consumer's
/// reads of Value: Consumer's inputs are its own other ones and then the
/// producer's (each distinct view once). False, changing nothing, when
/// the result would not fit a pointwise kernel.
bool inlineProducer(const plan::Kernel &Producer, plan::Kernel &Consumer,
                    uint32_t Value) {
  Program P = Program::of(Producer), C = Program::of(Consumer);
  P.toSingleAssignment(int64_t(Producer.Inputs.size()));
  C.toSingleAssignment(int64_t(Consumer.Inputs.size()));
  // One register per distinct view: no program writes an input's.
  std::vector<TensorRef> Inputs;
  auto InputOf = [&](const TensorRef &R) {
    for (size_t J = 0; J < Inputs.size(); ++J)
      if (sameView(Inputs[J], R))
        return int64_t(J);
    Inputs.push_back(R);
    return int64_t(Inputs.size() - 1);
  };
  std::vector<int64_t> ConsumerInput(Consumer.Inputs.size(), -1);
  for (size_t J = 0; J < Consumer.Inputs.size(); ++J)
    if (Consumer.Inputs[J].Value != Value)
      ConsumerInput[J] = InputOf(Consumer.Inputs[J]);
  std::vector<int64_t> ProducerInput;
  for (const TensorRef &R : Producer.Inputs)
    ProducerInput.push_back(InputOf(R));
  if (Inputs.size() > size_t(pw::MaxInputs))
    return false;
  int64_t NumIn = int64_t(Inputs.size());
  int64_t PIn = int64_t(Producer.Inputs.size());
  int64_t CIn = int64_t(Consumer.Inputs.size());
  // Registers: the inputs, then the producer's others, then the consumer's.
  int64_t PBase = NumIn - PIn, CBase = PBase + P.Registers - CIn;
  auto MapP = [&](int64_t R) {
    return R < PIn ? ProducerInput[size_t(R)] : PBase + R;
  };
  int64_t Result = MapP(P.Outputs[0]);
  auto MapC = [&](int64_t R) {
    if (R >= CIn)
      return CBase + R;
    return ConsumerInput[size_t(R)] >= 0 ? ConsumerInput[size_t(R)] : Result;
  };
  const std::vector<double> &PConst =
      Producer.attrs<plan::KernelKind::Pointwise>().Constants;
  const std::vector<double> &CConst =
      Consumer.attrs<plan::KernelKind::Pointwise>().Constants;
  int64_t FloatBase = int64_t(PConst.size());
  Program F;
  F.Registers = CBase + C.Registers;
  for (int Side = 0; Side < 2; ++Side)
    for (auto X : Side ? C.Code : P.Code) {
      PointwiseOp Op = PointwiseOp(X[0]);
      auto Map = [&](int64_t R) { return Side ? MapC(R) : MapP(R); };
      for (unsigned A = 0; A < pw::registerArgs(Op); ++A)
        X[2 + A] = Map(X[2 + A]);
      X[1] = Map(X[1]);
      if (Side && Op == PointwiseOp::Const)
        X[2] += FloatBase;
      if (Side && Op == PointwiseOp::Dropout)
        X[3] += FloatBase;
      F.Code.push_back(X);
    }
  for (int64_t R : C.Outputs)
    F.Outputs.push_back(MapC(R));
  F.compact(NumIn);
  std::vector<double> Constants = PConst;
  Constants.insert(Constants.end(), CConst.begin(), CConst.end());
  if (F.Registers > pw::MaxRegisters ||
      F.Code.size() > size_t(pw::MaxInstructions) ||
      Constants.size() > size_t(pw::MaxConstants))
    return false;
  Consumer.Inputs = std::move(Inputs);
  Consumer.Attrs = F.attrs(std::move(Constants));
  return true;
}

} // namespace

unsigned fusePointwiseChains(KernelProgram &P, bool Forward) {
  size_t NK = P.Kernels.size();
  std::vector<bool> Gone(NK, false), Dropped(P.Values.size(), false);
  std::vector<bool> Kept(P.Values.size(), false);
  for (uint32_t V : P.Training.Inputs)
    Kept[V] = true;
  for (uint32_t V : P.Training.Targets)
    Kept[V] = true;
  if (P.Training.LossValue != plan::NoIndex)
    Kept[P.Training.LossValue] = true;
  // Each value's readers and writers, kept current as kernels fuse: a
  // scan of the program per candidate made planning an 80-layer model
  // quadratic in its kernels.
  std::vector<std::vector<size_t>> Readers(P.Values.size()),
      Writers(P.Values.size());
  for (size_t K = 0; K < NK; ++K) {
    for (const TensorRef &R : P.Kernels[K].Inputs)
      if (!llvm::is_contained(Readers[R.Value], K))
        Readers[R.Value].push_back(K);
    for (const TensorRef &R : P.Kernels[K].Outputs)
      Writers[R.Value].push_back(K);
  }
  std::map<size_t, unsigned> Absorbed;
  unsigned Fused = 0;
  for (size_t I = 0; I < NK; ++I) {
    const plan::Kernel &Prod = P.Kernels[I];
    if (Prod.kind() != KernelKind::Pointwise || Prod.Outputs.size() != 1 ||
        (!Forward && !Prod.Backward))
      continue;
    uint32_t V = Prod.Outputs[0].Value;
    const plan::Value &Val = P.Values[V];
    if (Kept[V] || Val.Tensor != plan::NoIndex ||
        Val.Constant != plan::NoIndex || reads(Prod, V))
      continue;
    // V's one reader, a later pointwise kernel of the same pass over the
    // same elements; nobody else writes V.
    if (Writers[V] != std::vector<size_t>{I} || Readers[V].size() != 1 ||
        Readers[V][0] < I)
      continue;
    size_t Reader = Readers[V][0];
    plan::Kernel &Cons = P.Kernels[Reader];
    if (Cons.kind() != KernelKind::Pointwise ||
        Cons.Backward != Prod.Backward ||
        Cons.Outputs[0].Shape != Prod.Outputs[0].Shape)
      continue;
    bool Fits = true;
    for (const TensorRef &R : Cons.Inputs)
      Fits = Fits && (R.Value != V || sameView(R, Prod.Outputs[0]));
    // The producer's inputs hold the same elements when the reader runs,
    // and the reader does not store over them but element for element.
    for (const TensorRef &R : Prod.Inputs) {
      for (size_t J : Writers[R.Value])
        Fits = Fits && (Gone[J] || J <= I || J >= Reader);
      for (const TensorRef &O : Cons.Outputs)
        Fits = Fits && (O.Value != R.Value || sameView(O, R));
      // A parameter is gathered for its own op (ZeRO 3); where layers are
      // recomputed, a forward value lives from its recomputation to the
      // end of its layer's backward, so its read stays in its own op.
      const plan::Value &In = P.Values[R.Value];
      bool Pinned = In.Tensor != plan::NoIndex ||
                    (!Forward && In.Kind == plan::ValueKind::Activation);
      Fits = Fits && (!Pinned || Prod.Op == Cons.Op);
    }
    std::vector<TensorRef> ProducerInputs = Prod.Inputs;
    if (!Fits || !inlineProducer(Prod, Cons, V))
      continue;
    for (const TensorRef &R : ProducerInputs) {
      llvm::erase_value(Readers[R.Value], I);
      if (!llvm::is_contained(Readers[R.Value], Reader))
        Readers[R.Value].push_back(Reader);
    }
    plan::costKernel(Cons, P.Values);
    Absorbed[Reader] += 1 + Absorbed[I];
    Absorbed.erase(I);
    Gone[I] = true;
    Dropped[V] = true;
    ++Fused;
  }
  for (auto [K, N] : Absorbed)
    P.Kernels[K].Name += " (and " + std::to_string(N) + " fused)";
  if (Fused)
    dropKernelsAndValues(P, Gone, Dropped);
  return Fused;
}

} // namespace dsc::compute
