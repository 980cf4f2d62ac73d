//===- KernelAttrs.h - Each kernel kind's attributes, by name ----*- C++ -*-===//
//
// A kernel of the compute program is its operands (TensorRefs) and the
// attributes of its kind: one struct per kind, each field named and listed
// once in visit(), like every other plan struct, so plan.bin, the YAML form
// (`dsc show`) and the fuzzer all walk the same list. A Kernel holds them
// as a variant whose alternative is its kind: the kind cannot disagree
// with the attributes, and a kernel of one kind cannot be read as another.
// Forward and backward kinds with the same attributes derive one struct
// from the other; attrsAs<Base>() reads either.
//
// Dependency-free, like PlanFormat.h, and usable from CUDA host code.
//
//===----------------------------------------------------------------------===//

#ifndef DSC_KERNELATTRS_H
#define DSC_KERNELATTRS_H

#include "dsc/PlanEnums.h"

#include <cstdint>
#include <type_traits>
#include <variant>
#include <vector>

namespace dsc::plan {

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

/// Row-major C[b] = alpha op(A[b]) op(B[b]) + beta C[b], b < Batch, with
/// the epilogue's work beside it. Leading dimensions and batch strides are
/// in elements. Operands: A, B, then the epilogue's input (a bias: a dense
/// vector of N added to every row; the pre-activation DGeluTanh reads) ->
/// C, then the epilogue's output (the pre-activation BiasGeluTanh keeps,
/// laid out as C; a bias gradient: op(A) summed over K (M elements) or
/// op(B) summed over K (N elements)). BiasGeluTanh's first output is
/// gelu(AB + bias), its second AB + bias.
struct GemmAttrs {
  static constexpr KernelKind Kind = KernelKind::Gemm;
  int64_t M = 0, N = 0, K = 0, Batch = 1;
  bool TransA = false, TransB = false;
  int64_t LdA = 0, LdB = 0, LdC = 0;
  int64_t StrideA = 0, StrideB = 0, StrideC = 0;
  GemmEpilogue Epilogue = GemmEpilogue::None;
  double Alpha = 1, Beta = 0; ///< Beta 1: the product adds into C.
  template <class V> void visit(V &&F) {
    F("m", M);
    F("n", N);
    F("k", K);
    F("batch", Batch);
    F("trans_a", TransA);
    F("trans_b", TransB);
    F("ld_a", LdA);
    F("ld_b", LdB);
    F("ld_c", LdC);
    F("stride_a", StrideA);
    F("stride_b", StrideB);
    F("stride_c", StrideC);
    F("epilogue", Epilogue);
    F("alpha", Alpha);
    F("beta", Beta);
  }
};

/// Whether two products are the same for cuBLASLt (its algorithms): all
/// but the scale factors alike.
inline bool sameProduct(const GemmAttrs &A, const GemmAttrs &B) {
  return A.M == B.M && A.N == B.N && A.K == B.K && A.Batch == B.Batch &&
         A.TransA == B.TransA && A.TransB == B.TransB && A.LdA == B.LdA &&
         A.LdB == B.LdB && A.LdC == B.LdC && A.StrideA == B.StrideA &&
         A.StrideB == B.StrideB && A.StrideC == B.StrideC &&
         A.Epilogue == B.Epilogue;
}

/// The inputs and outputs a product with epilogue E has.
inline unsigned gemmInputs(GemmEpilogue E) {
  return E == GemmEpilogue::None || E == GemmEpilogue::BiasGradA ||
                 E == GemmEpilogue::BiasGradB
             ? 2
             : 3;
}
inline unsigned gemmOutputs(GemmEpilogue E) {
  return E == GemmEpilogue::None || E == GemmEpilogue::Bias ||
                 E == GemmEpilogue::DGeluTanh
             ? 1
             : 2;
}
/// Whether epilogue E hands cuBLASLt a bias vector (read, or written as
/// the bias gradient), a bias gradient in particular, and GELU's
/// pre-activation (kept, or read by the gradient).
inline bool gemmUsesBias(GemmEpilogue E) {
  return E != GemmEpilogue::None && E != GemmEpilogue::DGeluTanh;
}
inline bool gemmBiasGrad(GemmEpilogue E) {
  return E == GemmEpilogue::BiasGradA || E == GemmEpilogue::BiasGradB;
}
inline bool gemmUsesPreActivation(GemmEpilogue E) {
  return E == GemmEpilogue::BiasGeluTanh || E == GemmEpilogue::DGeluTanh;
}

/// The kernel workspace a product's cuBLASLt algorithm may use (its
/// split-K partial sums); the algorithm is the one cuBLASLt's heuristic
/// picks for this size, so the choice does not depend on other kernels.
constexpr uint64_t GemmWorkspaceBytes = uint64_t(32) << 20;

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// One instruction of a pointwise program: Dest = Op(A, B, C) over float
/// registers. Const loads Constants[A]; Dropout keeps register A with
/// probability 1 - Constants[B] in random stream C (include/dsc/Random.h);
/// the other ops read as many of A, B, C as registers as their arity says
/// (include/dsc/Pointwise.h).
struct PointwiseInstr {
  PointwiseOp Op = PointwiseOp::Const;
  uint32_t Dest = 0, A = 0, B = 0, C = 0;
  template <class V> void visit(V &&F) {
    F("op", Op);
    F("dest", Dest);
    F("a", A);
    F("b", B);
    F("c", C);
  }
};

/// A program run per element of the output's shape: up to 8 inputs, each
/// broadcast through its strides, fill the first registers; the store of
/// each output converts to its type. An empty program with one result
/// register 0 is a copy.
struct PointwiseAttrs {
  static constexpr KernelKind Kind = KernelKind::Pointwise;
  uint32_t Registers = 0;
  std::vector<PointwiseInstr> Program;
  /// The register each output stores, one per output.
  std::vector<uint32_t> Results;
  std::vector<double> Constants;
  template <class V> void visit(V &&F) {
    F("registers", Registers);
    F("program", Program);
    F("results", Results);
    F("constants", Constants);
  }
};

/// y = (x summed over the dims in AxesMask (bit d: dim d)) * Scale; y has
/// x's shape with the reduced dims 1. Scale is 1/count for a mean.
struct ReduceAttrs {
  static constexpr KernelKind Kind = KernelKind::Reduce;
  uint64_t AxesMask = 0;
  double Scale = 1;
  template <class V> void visit(V &&F) {
    F("axes_mask", AxesMask);
    F("scale", Scale);
  }
};

/// -> y, every element Value.
struct FillAttrs {
  static constexpr KernelKind Kind = KernelKind::Fill;
  double Value = 0;
  template <class V> void visit(V &&F) { F("value", Value); }
};

/// x, cos, sin -> y, each of y's shape (any strides; the tables broadcast):
/// with h = Cols / 2, y[i] = x[i] cos[i] - x[i+h] sin[i],
/// y[i+h] = x[i+h] cos[i+h] + x[i] sin[i+h]. Backward (dy, cos, sin -> dx)
/// applies the transpose.
struct RotaryAttrs {
  static constexpr KernelKind Kind = KernelKind::Rotary;
  int64_t Rows = 0, Cols = 0;
  template <class V> void visit(V &&F) {
    F("rows", Rows);
    F("cols", Cols);
  }
};
struct RotaryGradAttrs : RotaryAttrs {
  static constexpr KernelKind Kind = KernelKind::RotaryGrad;
};

/// g, u -> y = g sigmoid(g) u, all of one shape (any strides). Backward:
/// dy, g, u -> dg, du.
struct SwiGLUAttrs {
  static constexpr KernelKind Kind = KernelKind::SwiGLU;
  template <class V> void visit(V &&) {}
};
struct SwiGLUGradAttrs : SwiGLUAttrs {
  static constexpr KernelKind Kind = KernelKind::SwiGLUGrad;
};

//===----------------------------------------------------------------------===//
// Rows
//===----------------------------------------------------------------------===//

/// x -> y, softmax (or log-softmax) of each of Rows rows of Cols; with
/// ZeroMaskedRows a row of all -inf gives zeros.
struct SoftmaxAttrs {
  static constexpr KernelKind Kind = KernelKind::Softmax;
  int64_t Rows = 0, Cols = 0;
  bool ZeroMaskedRows = false, Log = false;
  template <class V> void visit(V &&F) {
    F("rows", Rows);
    F("cols", Cols);
    F("zero_masked_rows", ZeroMaskedRows);
    F("log", Log);
  }
};
/// y, dy -> dx.
struct SoftmaxGradAttrs {
  static constexpr KernelKind Kind = KernelKind::SoftmaxGrad;
  int64_t Rows = 0, Cols = 0;
  bool Log = false;
  template <class V> void visit(V &&F) {
    F("rows", Rows);
    F("cols", Cols);
    F("log", Log);
  }
};

/// Layer norm: x, w, [b] -> y, mean, rstd; RMS norm: x, w -> y, rstd.
/// With Residual the norm's input is the sum of two addends, x1, x2 in
/// place of x, and the sum is stored as a last output.
struct LayerNormAttrs {
  static constexpr KernelKind Kind = KernelKind::LayerNorm;
  int64_t Rows = 0, Cols = 0;
  bool Residual = false;
  double Epsilon = 1e-5;
  template <class V> void visit(V &&F) {
    F("rows", Rows);
    F("cols", Cols);
    F("residual", Residual);
    F("epsilon", Epsilon);
  }
};
struct RMSNormAttrs : LayerNormAttrs {
  static constexpr KernelKind Kind = KernelKind::RMSNorm;
};

/// Layer norm: dy, x, w, mean, rstd, [g] -> dx, dw, db; RMS norm: dy, x, w,
/// rstd, [g] -> dx, dw. With Residual, g (the residual stream's gradient)
/// is added to dx as stored.
struct LayerNormGradAttrs {
  static constexpr KernelKind Kind = KernelKind::LayerNormGrad;
  int64_t Rows = 0, Cols = 0;
  bool Residual = false;
  template <class V> void visit(V &&F) {
    F("rows", Rows);
    F("cols", Cols);
    F("residual", Residual);
  }
};
struct RMSNormGradAttrs : LayerNormGradAttrs {
  static constexpr KernelKind Kind = KernelKind::RMSNormGrad;
};

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// q [Batch, QHeads, QLen, HeadDim], k [Batch, KVHeads, KVLen, HeadDim],
/// v [Batch, KVHeads, KVLen, ValueDim], [bias] -> out, lse (fp32 natural
/// log-sum-exp of each query's scaled scores). Backward: dout, q, k, v,
/// out, lse, [bias] -> dq, dk, dv. Query head h reads key/value head
/// h / (QHeads / KVHeads).
struct AttentionAttrs {
  static constexpr KernelKind Kind = KernelKind::Attention;
  int64_t Batch = 0, QHeads = 0, KVHeads = 0, QLen = 0, KVLen = 0,
          HeadDim = 0, ValueDim = 0;
  bool Causal = false;
  AttentionAlgorithm Algorithm = AttentionAlgorithm::Math;
  double Scale = 1;
  template <class V> void visit(V &&F) {
    F("batch", Batch);
    F("q_heads", QHeads);
    F("kv_heads", KVHeads);
    F("q_len", QLen);
    F("kv_len", KVLen);
    F("head_dim", HeadDim);
    F("value_dim", ValueDim);
    F("causal", Causal);
    F("algorithm", Algorithm);
    F("scale", Scale);
  }
};
struct AttentionGradAttrs : AttentionAttrs {
  static constexpr KernelKind Kind = KernelKind::AttentionGrad;
};

//===----------------------------------------------------------------------===//
// Tokens
//===----------------------------------------------------------------------===//

/// table, indices -> out[o, j, i] = table[o, indices[j], i] over the
/// Outer x Dim x Inner view of the table (Axis the gathered dim, Count
/// indices). Backward: indices, dout -> dtable, zeroed first, rows summed.
struct GatherAttrs {
  static constexpr KernelKind Kind = KernelKind::Gather;
  int64_t Axis = 0, Outer = 0, Dim = 0, Inner = 0, Count = 0;
  template <class V> void visit(V &&F) {
    F("axis", Axis);
    F("outer", Outer);
    F("dim", Dim);
    F("inner", Inner);
    F("count", Count);
  }
};
struct GatherGradAttrs : GatherAttrs {
  static constexpr KernelKind Kind = KernelKind::GatherGrad;
};

/// logits (Rows rows of Classes, possibly padded: rowStride), targets ->
/// loss (the mean over rows not ignored), lse. Backward: logits, targets,
/// lse, dloss -> dlogits.
struct CrossEntropyAttrs {
  static constexpr KernelKind Kind = KernelKind::CrossEntropy;
  int64_t Rows = 0, Classes = 0, IgnoreIndex = -100;
  template <class V> void visit(V &&F) {
    F("rows", Rows);
    F("classes", Classes);
    F("ignore_index", IgnoreIndex);
  }
};
struct CrossEntropyGradAttrs : CrossEntropyAttrs {
  static constexpr KernelKind Kind = KernelKind::CrossEntropyGrad;
};

//===----------------------------------------------------------------------===//
// The variant: alternative I is the attributes of KernelKind(I).
//===----------------------------------------------------------------------===//

using KernelAttrs =
    std::variant<GemmAttrs, PointwiseAttrs, ReduceAttrs, SoftmaxAttrs,
                 SoftmaxGradAttrs, LayerNormAttrs, LayerNormGradAttrs,
                 RMSNormAttrs, RMSNormGradAttrs, AttentionAttrs,
                 AttentionGradAttrs, GatherAttrs, GatherGradAttrs,
                 CrossEntropyAttrs, CrossEntropyGradAttrs, FillAttrs,
                 RotaryAttrs, RotaryGradAttrs, SwiGLUAttrs, SwiGLUGradAttrs>;

namespace detail {
template <size_t... I>
constexpr bool attrsMatchKinds(std::index_sequence<I...>) {
  return ((std::variant_alternative_t<I, KernelAttrs>::Kind == KernelKind(I)) &&
          ...);
}
} // namespace detail
static_assert(std::variant_size_v<KernelAttrs> == NumKernelKinds &&
                  detail::attrsMatchKinds(
                      std::make_index_sequence<NumKernelKinds>()),
              "KernelAttrs' alternatives follow KernelKind's order");

/// The attributes of kind KK.
template <KernelKind KK>
using AttrsOf = std::variant_alternative_t<size_t(KK), KernelAttrs>;

/// The attributes as T, where the alternative held is T or derives from it
/// (attrsAs<AttentionAttrs> reads attention and its gradient); null
/// otherwise.
template <class T> const T *attrsAs(const KernelAttrs &A) {
  return std::visit(
      [](const auto &X) -> const T * {
        if constexpr (std::is_base_of_v<T, std::decay_t<decltype(X)>>)
          return &X;
        else
          return nullptr;
      },
      A);
}
template <class T> T *attrsAs(KernelAttrs &A) {
  return const_cast<T *>(attrsAs<T>(static_cast<const KernelAttrs &>(A)));
}

namespace detail {
template <size_t I = 0> void emplaceKind(KernelAttrs &A, size_t Kind) {
  if constexpr (I < std::variant_size_v<KernelAttrs>) {
    if (Kind == I)
      A.emplace<I>();
    else
      emplaceKind<I + 1>(A, Kind);
  }
}
} // namespace detail

/// Default attributes of kind K.
inline KernelAttrs defaultAttrs(KernelKind K) {
  KernelAttrs A;
  detail::emplaceKind(A, size_t(K));
  return A;
}

} // namespace dsc::plan

#endif
