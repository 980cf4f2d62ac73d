//===- CopyElision.cpp - Kernels write where a copy would have put it -----===//
//
// Views cost no kernel, but some reach a reader only through a copy: an
// attention output [B, H, T, D] read as [B, T, H * D] by the next product,
// the gradients of Q, K and V concatenated into the gradient of the fused
// QKV product. Each such copy moves the whole value through memory once
// more (GPT-2 small: 48 copies, a fifth of its step on an H100). Where the
// copied value exists only to be copied, the kernels that write and read
// it can address the copy's destination instead, through views composed
// with the copy's: the copy and the value disappear.
//
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Kernels.h"

#include "dsc/AttentionAlgorithms.h"
#include "dsc/KernelRegistry.h"

#include <algorithm>
#include <map>
#include <set>
#include <cstdlib>

namespace dsc::compute {

namespace {

using plan::KernelKind;
using plan::TensorRef;

/// One dim of a copy: N elements, Src apart in the source, Dst apart in
/// the destination.
struct CopyDim {
  int64_t N, Src, Dst;
};

/// The copy's dims from the source's innermost outwards when it reads
/// every element of a value of Elems elements exactly once, densely from
/// offset 0 (the source is its storage, in some order); nullopt otherwise.
std::optional<std::vector<CopyDim>> denseCopyDims(const TensorRef &In,
                                                  const TensorRef &Out,
                                                  uint64_t Elems) {
  if (In.Offset != 0 || In.Shape != Out.Shape ||
      In.Strides.size() != In.Shape.size() ||
      Out.Strides.size() != Out.Shape.size())
    return std::nullopt;
  std::vector<CopyDim> Dims;
  for (size_t D = 0; D < In.Shape.size(); ++D)
    if (In.Shape[D] != 1)
      Dims.push_back({In.Shape[D], In.Strides[D], Out.Strides[D]});
  std::sort(Dims.begin(), Dims.end(),
            [](const CopyDim &A, const CopyDim &B) { return A.Src < B.Src; });
  int64_t Expected = 1;
  for (const CopyDim &D : Dims) {
    if (D.N <= 0 || D.Src != Expected)
      return std::nullopt;
    Expected *= D.N;
  }
  if (uint64_t(Expected) != Elems)
    return std::nullopt;
  return Dims;
}

/// Every operand of K, inputs then outputs.
std::vector<TensorRef *> operands(plan::Kernel &K) {
  std::vector<TensorRef *> All;
  for (TensorRef &R : K.Inputs)
    All.push_back(&R);
  for (TensorRef &R : K.Outputs)
    All.push_back(&R);
  return All;
}

bool isPlainCopy(const plan::Kernel &K,
                 const std::vector<plan::Value> &Values) {
  // One register, no instruction, register 0 stored.
  const plan::PointwiseAttrs *P = std::get_if<plan::PointwiseAttrs>(&K.Attrs);
  return P && K.Inputs.size() == 1 && K.Outputs.size() == 1 &&
         P->Constants.empty() && P->Registers == 1 && P->Program.empty() &&
         P->Results == std::vector<uint32_t>{0} &&
         K.Inputs[0].Value != K.Outputs[0].Value &&
         Values[K.Inputs[0].Value].Type == Values[K.Outputs[0].Value].Type;
}

/// Whether kernel K still runs on any views of its operands: kernels of
/// any strides, and flash attention wherever its rule holds.
bool takesAnyViews(const plan::Kernel &K,
                   const std::vector<plan::Value> &Values) {
  if (const plan::AttentionAttrs *A = K.as<plan::AttentionAttrs>())
    return A->Algorithm != plan::AttentionAlgorithm::Math &&
           plan::attentionMisfit(K, A->Algorithm, Values).empty();
  return plan::kernelKindInfo(K.kind()).AnyViews;
}

} // namespace

std::optional<TensorRef> viewThroughCopy(const TensorRef &V,
                                         const TensorRef &In,
                                         const TensorRef &Out,
                                         uint64_t Elems) {
  std::optional<std::vector<CopyDim>> Dims = denseCopyDims(In, Out, Elems);
  if (!Dims || V.Shape.size() != V.Strides.size() || V.Offset >= Elems)
    return std::nullopt;
  // The source offset of an element is a number whose digits (dims of the
  // copy, innermost first) each move the destination by their own
  // stride. A view of the source maps to one of the destination when
  // each of its dims moves a single digit and no digit can carry.
  std::vector<int64_t> Digit(Dims->size()), Reach(Dims->size());
  int64_t Rest = int64_t(V.Offset);
  for (size_t T = Dims->size(); T-- > 0;) {
    Digit[T] = Rest / (*Dims)[T].Src;
    Rest %= (*Dims)[T].Src;
  }
  TensorRef R{Out.Value, 0, V.Shape, std::vector<int64_t>(V.Shape.size(), 0)};
  for (size_t K = 0; K < V.Shape.size(); ++K) {
    int64_t S = V.Strides[K];
    if (V.Shape[K] == 1 || S == 0)
      continue;
    if (S < 0)
      return std::nullopt;
    size_t T = Dims->size();
    while (T-- > 0 && (*Dims)[T].Src > S) {
    }
    if (T >= Dims->size() || S % (*Dims)[T].Src)
      return std::nullopt;
    int64_t Times = S / (*Dims)[T].Src;
    Reach[T] += Times * (V.Shape[K] - 1);
    R.Strides[K] = Times * (*Dims)[T].Dst;
  }
  int64_t Offset = int64_t(Out.Offset);
  for (size_t T = 0; T < Dims->size(); ++T) {
    if (Digit[T] + Reach[T] >= (*Dims)[T].N)
      return std::nullopt;
    Offset += Digit[T] * (*Dims)[T].Dst;
  }
  if (Offset < 0)
    return std::nullopt;
  R.Offset = uint64_t(Offset);
  return R;
}

namespace {

/// A view's dims as (extent, stride), stride 0 and extent-1 dims dropped,
/// innermost first, neighbours merged where the outer continues the
/// inner: [16, 12, 1024, 64] at strides [2359296, 64, 2304, 1] becomes
/// 768 at 1, 1024 at 2304, 16 at 2359296.
std::vector<std::pair<int64_t, int64_t>> canonicalDims(const TensorRef &R) {
  std::vector<std::pair<int64_t, int64_t>> Dims; // (stride, extent)
  for (size_t K = 0; K < R.Shape.size(); ++K)
    if (R.Shape[K] != 1 && R.Strides[K] != 0)
      Dims.push_back({R.Strides[K], R.Shape[K]});
  std::sort(Dims.begin(), Dims.end());
  std::vector<std::pair<int64_t, int64_t>> Merged;
  for (auto [Stride, N] : Dims) {
    if (!Merged.empty() &&
        Merged.back().first * Merged.back().second == Stride)
      Merged.back().second *= N;
    else
      Merged.push_back({Stride, N});
  }
  return Merged;
}

} // namespace

bool mayOverlap(const TensorRef &A, const TensorRef &B) {
  if (A.Value != B.Value)
    return false;
  for (const TensorRef *R : {&A, &B})
    for (size_t K = 0; K < R->Shape.size(); ++K)
      if (R->Shape[K] == 0)
        return false;
      else if (K >= R->Strides.size() || R->Strides[K] < 0)
        return true;
  // The views meet where B.Offset - A.Offset = sum of (a_k - b_k) * s_k
  // for indices a, b inside their extents. With the same strides, sorted
  // descending and each beyond what the inner dims reach, each dim leaves
  // at most two choices (floor and ceiling), tried in turn.
  std::vector<std::pair<int64_t, int64_t>> DA = canonicalDims(A),
                                           DB = canonicalDims(B);
  // Two dims of one view at one stride reach each other's elements.
  for (auto *D : {&DA, &DB})
    for (size_t K = 1; K < D->size(); ++K)
      if ((*D)[K].first == (*D)[K - 1].first)
        return true;
  // A dim only one side has moves it by nothing on the other.
  std::vector<int64_t> Strides;
  for (auto *D : {&DA, &DB})
    for (auto [S, N] : *D)
      Strides.push_back(S);
  std::sort(Strides.begin(), Strides.end());
  Strides.erase(std::unique(Strides.begin(), Strides.end()), Strides.end());
  auto Extent = [](const std::vector<std::pair<int64_t, int64_t>> &D,
                   int64_t S) {
    for (auto [Stride, N] : D)
      if (Stride == S)
        return N;
    return int64_t(1);
  };
  struct Dim {
    int64_t Stride, Lo, Hi;
  };
  std::vector<Dim> Dims;
  for (size_t K = Strides.size(); K-- > 0;)
    Dims.push_back({Strides[K], -(Extent(DB, Strides[K]) - 1),
                    Extent(DA, Strides[K]) - 1});
  for (size_t K = 0; K + 1 < Dims.size(); ++K) {
    int64_t Inner = 0;
    for (size_t J = K + 1; J < Dims.size(); ++J)
      Inner += Dims[J].Stride * std::max(-Dims[J].Lo, Dims[J].Hi);
    if (Inner >= Dims[K].Stride)
      return true; // Interleaved: no cheap answer.
  }
  auto Meets = [&](auto &&Self, size_t K, int64_t Delta) -> bool {
    if (K == Dims.size())
      return Delta == 0;
    const Dim &D = Dims[K];
    int64_t Floor = Delta >= 0 ? Delta / D.Stride
                               : -((-Delta + D.Stride - 1) / D.Stride);
    for (int64_t J : {Floor, Floor + 1})
      if (J >= D.Lo && J <= D.Hi && Self(Self, K + 1, Delta - J * D.Stride))
        return true;
    return false;
  };
  return Meets(Meets, 0, int64_t(B.Offset) - int64_t(A.Offset));
}

void dropKernelsAndValues(KernelProgram &P, const std::vector<bool> &Gone,
                          const std::vector<bool> &Dropped) {
  std::vector<plan::Kernel> Kernels;
  std::vector<uint32_t> Node;
  for (size_t K = 0; K < P.Kernels.size(); ++K)
    if (!Gone[K]) {
      Kernels.push_back(std::move(P.Kernels[K]));
      Node.push_back(P.Node[K]);
    }
  P.Kernels = std::move(Kernels);
  P.Node = std::move(Node);
  std::vector<uint32_t> NewId(P.Values.size(), plan::NoIndex);
  std::vector<plan::Value> Values;
  for (size_t V = 0; V < P.Values.size(); ++V)
    if (!Dropped[V]) {
      NewId[V] = uint32_t(Values.size());
      Values.push_back(std::move(P.Values[V]));
    }
  P.Values = std::move(Values);
  auto Renumber = [&](uint32_t &V) {
    if (V != plan::NoIndex)
      V = NewId[V];
  };
  for (plan::Kernel &K : P.Kernels)
    for (TensorRef *R : operands(K))
      Renumber(R->Value);
  for (uint32_t &V : P.ValueOf)
    Renumber(V);
  for (plan::Constant &C : P.Constants)
    Renumber(C.Value);
  for (uint32_t &V : P.Training.Inputs)
    Renumber(V);
  for (uint32_t &V : P.Training.Targets)
    Renumber(V);
  Renumber(P.Training.LossValue);
}

namespace {

/// One pass of elideCopies, leaving the copies into Forbidden values:
/// marks the copies Gone and their sources Dropped, and lists the
/// destinations that gained writers.
unsigned elideCopiesOnce(KernelProgram &P, const std::vector<bool> &Forbidden,
                         std::vector<bool> &Gone, std::vector<bool> &Dropped,
                         std::vector<uint32_t> &Destinations) {
  // The kernels with an operand on each value, ascending: a copy looks
  // only at its source's and destination's kernels, so a 405B program of
  // tens of thousands of kernels is not scanned once per copy.
  std::vector<std::vector<uint32_t>> UsersOf(P.Values.size());
  for (uint32_t K = 0; K < P.Kernels.size(); ++K)
    for (TensorRef *R : operands(P.Kernels[K]))
      if (UsersOf[R->Value].empty() || UsersOf[R->Value].back() != K)
        UsersOf[R->Value].push_back(K);

  unsigned Elided = 0;
  for (size_t C = 0; C < P.Kernels.size(); ++C) {
    const plan::Kernel &Copy = P.Kernels[C];
    if (!isPlainCopy(Copy, P.Values))
      continue;
    const TensorRef In = Copy.Inputs[0], Out = Copy.Outputs[0];
    uint32_t X = In.Value;
    const plan::Value &XV = P.Values[X];
    if (XV.Kind != plan::ValueKind::Activation &&
        XV.Kind != plan::ValueKind::Gradient)
      continue;
    if (Forbidden[Out.Value] ||
        P.Values[Out.Value].Kind == plan::ValueKind::Param ||
        P.Values[Out.Value].Kind == plan::ValueKind::Input ||
        P.Values[Out.Value].Kind == plan::ValueKind::Target ||
        P.Values[Out.Value].Kind == plan::ValueKind::Constant)
      continue;
    // Every other operand on X, rewritten onto the destination.
    std::vector<std::pair<TensorRef *, TensorRef>> Rewrites;
    std::vector<uint32_t> Touched;
    size_t First = C, Last = C;
    bool Fits = true;
    for (uint32_t K : UsersOf[X]) {
      if (!Fits)
        break;
      if (K == C || Gone[K])
        continue;
      // X rewritten after the copy read it would now change the copy's
      // destination.
      if (K > C)
        for (const TensorRef &R : P.Kernels[K].Outputs)
          Fits = Fits && R.Value != X;
      bool Uses = false;
      for (TensorRef *R : operands(P.Kernels[K]))
        if (R->Value == X) {
          std::optional<TensorRef> New = viewThroughCopy(*R, In, Out, XV.Elems);
          if (!New) {
            Fits = false;
            break;
          }
          Rewrites.push_back({R, *New});
          Uses = true;
        }
      if (Uses) {
        Touched.push_back(K);
        First = std::min<size_t>(First, K);
        Last = std::max<size_t>(Last, K);
      }
    }
    if (!Fits || Rewrites.empty())
      continue;
    // The destination's elements hold X from X's first write to its last
    // use: no other kernel may write them in between (it would clobber
    // X), nor read them before the copy did (it would see X too soon).
    for (uint32_t K : UsersOf[Out.Value]) {
      if (K < First || K > Last || K == C || Gone[K])
        continue;
      auto Meets = [&](const TensorRef &R) {
        return R.Value == Out.Value && mayOverlap(R, Out);
      };
      const plan::Kernel &Other = P.Kernels[K];
      if (std::any_of(Other.Outputs.begin(), Other.Outputs.end(), Meets) ||
          (K < C &&
           std::any_of(Other.Inputs.begin(), Other.Inputs.end(), Meets)))
        Fits = false;
    }
    if (!Fits)
      continue;
    // Each rewritten kernel must still run on its new views.
    std::vector<plan::Kernel> Saved;
    for (size_t K : Touched)
      Saved.push_back(P.Kernels[K]);
    // Any kernel runs where only its operands' base moved (same shape and
    // strides, 16-byte aligned): a product writing a bias gradient
    // straight into the parameter's gradient.
    // A dim of extent 1 moves nothing, so its stride may differ: it keeps
    // the kernel's own (a product's batch of one writing a weight's
    // gradient, which the copy addressed without that dim).
    std::map<size_t, bool> Moved;
    for (size_t K : Touched)
      Moved[K] = true;
    for (auto &[R, New] : Rewrites) {
      if (New.Shape == R->Shape)
        for (size_t D = 0; D < New.Shape.size(); ++D)
          if (New.Shape[D] == 1)
            New.Strides[D] = R->Strides[D];
      for (size_t K : Touched)
        for (TensorRef *Ref : operands(P.Kernels[K]))
          if (Ref == R && (New.Shape != R->Shape || New.Strides != R->Strides ||
                           New.Offset % 8 != 0))
            Moved[K] = false;
      *R = New;
    }
    for (size_t K : Touched)
      Fits = Fits && (Moved[K] || takesAnyViews(P.Kernels[K], P.Values));
    if (!Fits) {
      for (size_t I = 0; I < Touched.size(); ++I)
        P.Kernels[Touched[I]] = std::move(Saved[I]);
      continue;
    }
    Gone[C] = true;
    Dropped[X] = true;
    Destinations.push_back(Out.Value);
    // X's kernels now address the destination.
    std::vector<uint32_t> &Users = UsersOf[Out.Value];
    std::vector<uint32_t> Merged;
    std::set_union(Users.begin(), Users.end(), Touched.begin(), Touched.end(),
                   std::back_inserter(Merged));
    Users = std::move(Merged);
    ++Elided;
  }
  return Elided;
}

/// The nodes of the kernels that write each value.
std::vector<std::set<uint32_t>> writerNodes(const KernelProgram &P,
                                            const std::vector<bool> &Gone) {
  std::vector<std::set<uint32_t>> Nodes(P.Values.size());
  for (size_t K = 0; K < P.Kernels.size(); ++K)
    if (!Gone[K])
      for (const TensorRef &R : P.Kernels[K].Outputs)
        Nodes[R.Value].insert(P.Node[K]);
  return Nodes;
}

} // namespace

unsigned elideCopies(KernelProgram &P) {
  // The memory plan starts a value's lifetime anew at a write after its
  // last access, so a value's writers must run together: a destination
  // whose writers would come from more nodes than before (a concatenation
  // of which only some parts could be elided, the others still copied in
  // a later op) keeps its copies, and the pass runs again without eliding
  // into it.
  const KernelProgram Original = P;
  std::vector<bool> Forbidden(P.Values.size(), false);
  for (;;) {
    P = Original;
    std::vector<bool> Gone(P.Kernels.size(), false);
    std::vector<bool> Dropped(P.Values.size(), false);
    std::vector<uint32_t> Destinations;
    unsigned Elided = elideCopiesOnce(P, Forbidden, Gone, Dropped,
                                      Destinations);
    std::vector<std::set<uint32_t>> Before = writerNodes(
        Original, std::vector<bool>(Original.Kernels.size(), false));
    std::vector<std::set<uint32_t>> Now = writerNodes(P, Gone);
    bool Again = false;
    for (uint32_t Y : Destinations) {
      if (Now[Y].size() > 1 && Now[Y] != Before[Y] && !Forbidden[Y]) {
        Forbidden[Y] = true;
        Again = true;
      }
    }
    if (Again)
      continue;
    if (Elided)
      dropKernelsAndValues(P, Gone, Dropped);
    return Elided;
  }
}

} // namespace dsc::compute
