//===- ComputeGradTest.cpp - Every gradient rule against finite differences ===//
//
// For each operator: a graph whose inputs are parameters with random
// values, the op, and a loss sum(out_k * R_k) with random constants R_k
// (so no output's gradient is trivial). Autodiff's gradient of every input
// element must match the central difference of the interpreter's loss.
//
//===----------------------------------------------------------------------===//

#include "ComputeTestUtil.h"

#include "dsc/Compute/Ops.h"

#include <cmath>
#include <random>

using namespace dsc::compute;
using llvm::Expected;
using llvm::StringRef;
using dsc::plan::DType;

namespace {

/// How an input's random values are drawn.
enum class Range { Signed, Positive, AwayFromZero, Index };

class GradCheck {
public:
  explicit GradCheck(unsigned Seed = 1) : Rng(Seed) {}

  /// A trainable input of the op under test.
  ValueId param(Shape S, Range R = Range::Signed) {
    Value V;
    V.Name = "p" + std::to_string(G.Params.size());
    V.Dims = S;
    V.Kind = ValueKind::Param;
    V.Param = int32_t(G.Params.size());
    ValueId Id = G.addValue(std::move(V));
    G.Params.push_back({G.Values[Id].Name, Id, true, NoValue});
    Values[Id] = random(S, R);
    return Id;
  }
  /// A constant input (indices, masks, exponents).
  ValueId constant(HostTensor T) { return G.addConstant(std::move(T)); }
  ValueId ints(Shape S, std::vector<int64_t> V) {
    return constant(HostTensor::fromInts(DType::I64, S, std::move(V)));
  }

  std::vector<ValueId> op(StringRef Name, std::vector<ValueId> Ins,
                          Attributes A = {}, unsigned Outputs = 1) {
    Expected<std::vector<ValueId>> Out =
        G.addNode(Name, std::move(Ins), std::move(A), Outputs);
    if (!Out) {
      ADD_FAILURE() << toString(Out.takeError());
      return std::vector<ValueId>(Outputs, NoValue);
    }
    return *Out;
  }

  /// Differentiates sum(out * R) for the given outputs and compares every
  /// parameter's gradient with central differences.
  void check(std::vector<ValueId> Outputs, double Tolerance = 2e-3) {
    ValueId Loss = NoValue;
    for (ValueId O : Outputs) {
      if (O == NoValue)
        return;
      ValueId R = constant(random(G.Values[O].Dims, Range::Signed));
      ValueId P = op("Mul", {O, R})[0];
      Attributes A;
      A.set("keepdims", 0);
      ValueId S = op("ReduceSum", {P}, A)[0];
      Loss = Loss == NoValue ? S : op("Add", {Loss, S})[0];
    }
    G.Outputs = {Loss};
    G.Loss = Loss;
    ASSERT_TRUE(ok(differentiate(G, {})));
    Interpreter I(G);
    for (auto &[V, T] : Values)
      ASSERT_TRUE(ok(I.set(V, T)));
    ASSERT_TRUE(ok(I.run(Seed)));
    for (const ParamInfo &P : G.Params) {
      SCOPED_TRACE(P.Name);
      ASSERT_NE(P.Grad, NoValue);
      std::vector<double> Auto = I.value(P.Grad).values();
      HostTensor Base = Values[P.Value].contiguousCopy();
      double Diff = 0, Norm = 0;
      for (int64_t K = 0; K < Base.numel(); ++K) {
        double Numeric = difference(P.Value, Base, K);
        Diff += (Numeric - Auto[size_t(K)]) * (Numeric - Auto[size_t(K)]);
        Norm += Numeric * Numeric;
      }
      EXPECT_LE(std::sqrt(Diff), Tolerance * std::sqrt(Norm) + 1e-4)
          << "|autodiff - finite difference| = " << std::sqrt(Diff)
          << ", |finite difference| = " << std::sqrt(Norm);
    }
  }

  Graph G;
  uint64_t Seed = 7;

private:
  HostTensor random(const Shape &S, Range R) {
    std::uniform_real_distribution<float> U(-1, 1);
    std::vector<float> V(size_t(numel(S)));
    for (float &X : V) {
      X = U(Rng);
      if (R == Range::Positive)
        X = 0.5f + std::fabs(X);
      else if (R == Range::AwayFromZero)
        X = X < 0 ? X - 0.5f : X + 0.5f;
    }
    return HostTensor::fromFloats(S, std::move(V));
  }

  /// d loss / d param[K] by central differences (in double: the loss is
  /// re-run at x + h and x - h).
  double difference(ValueId Param, const HostTensor &Base, int64_t K) {
    const double H = 1e-2;
    auto LossAt = [&](double Delta) {
      HostTensor T = Base.contiguousCopy().cast(DType::F32);
      T.floatData()[K] += float(Delta);
      Interpreter I(G);
      for (auto &[V, X] : Values)
        EXPECT_TRUE(ok(I.set(V, V == Param ? T : X)));
      EXPECT_TRUE(ok(I.run(Seed)));
      return I.value(G.Loss).at(0);
    };
    // Fourth-order central difference: float rounding, not h, dominates.
    return (8 * (LossAt(H / 2) - LossAt(-H / 2)) - (LossAt(H) - LossAt(-H))) /
           (6 * H);
  }

  std::mt19937 Rng;
  std::map<ValueId, HostTensor> Values;
};

TEST(GradCheck, Binary) {
  for (const char *Op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    SCOPED_TRACE(Op);
    GradCheck C;
    ValueId A = C.param({2, 3, 4});
    // Broadcast along the first and last dims.
    ValueId B = C.param({3, 1}, Range::AwayFromZero);
    C.check(C.op(Op, {A, B}));
  }
}

TEST(GradCheck, Pow) {
  GradCheck C;
  ValueId A = C.param({3, 4}, Range::Positive);
  C.check(C.op("Pow", {A, C.constant(HostTensor::scalar(DType::F32, 3))}));
  GradCheck D;
  ValueId X = D.param({3, 4}, Range::Positive), E = D.param({4}, Range::Positive);
  D.check(D.op("Pow", {X, E}));
}

TEST(GradCheck, Unary) {
  struct U {
    const char *Op;
    Range R;
  };
  for (U Case : {U{"Neg", Range::Signed}, U{"Sqrt", Range::Positive},
                 U{"Reciprocal", Range::AwayFromZero}, U{"Exp", Range::Signed},
                 U{"Log", Range::Positive}, U{"Tanh", Range::Signed},
                 U{"Erf", Range::Signed}, U{"Sigmoid", Range::Signed},
                 U{"Relu", Range::AwayFromZero}, U{"Cos", Range::Signed},
                 U{"Sin", Range::Signed}, U{"Abs", Range::AwayFromZero},
                 U{"Identity", Range::Signed}}) {
    SCOPED_TRACE(Case.Op);
    GradCheck C;
    C.check(C.op(Case.Op, {C.param({5, 3}, Case.R)}));
  }
}

TEST(GradCheck, Gelu) {
  for (const char *Form : {"none", "tanh"}) {
    SCOPED_TRACE(Form);
    GradCheck C;
    Attributes A;
    A.setString("approximate", Form);
    C.check(C.op("Gelu", {C.param({4, 6})}, A));
  }
}

TEST(GradCheck, WhereAndCast) {
  GradCheck C;
  std::vector<int64_t> Mask = {1, 0, 1, 1, 0, 0};
  ValueId Cond = C.constant(HostTensor::fromInts(DType::U8, {2, 3}, Mask));
  ValueId X = C.param({2, 3}), Y = C.param({3});
  Attributes To;
  To.set("to", 1);
  C.check(C.op("Cast", {C.op("Where", {Cond, X, Y})[0]}, To));
}

TEST(GradCheck, Views) {
  GradCheck C;
  ValueId X = C.param({2, 3, 4});
  ValueId R = C.op("Reshape", {X, C.ints({2}, {6, 4})})[0];
  Attributes P;
  P.set("perm", std::vector<int64_t>{1, 0});
  ValueId T = C.op("Transpose", {R}, P)[0];
  ValueId U = C.op("Unsqueeze", {T, C.ints({1}, {0})})[0];
  ValueId E = C.op("Expand", {U, C.ints({3}, {3, 4, 6})})[0];
  ValueId F = C.op("Flatten", {E}, Attributes().set("axis", 2))[0];
  C.check({F});
}

TEST(GradCheck, SliceConcatSplit) {
  GradCheck C;
  ValueId X = C.param({4, 6});
  // Every other column from 1, reversed rows.
  ValueId S = C.op("Slice", {X, C.ints({1}, {1}), C.ints({1}, {6}),
                             C.ints({1}, {1}), C.ints({1}, {2})})[0];
  ValueId R = C.op("Slice", {X, C.ints({1}, {-1}), C.ints({1}, {-100}),
                             C.ints({1}, {0}), C.ints({1}, {-1})})[0];
  ValueId Y = C.param({4, 2});
  ValueId Cat = C.op("Concat", {S, Y}, Attributes().set("axis", 1))[0];
  std::vector<ValueId> Parts =
      C.op("Split", {Cat}, Attributes().set("axis", 1), 2);
  C.check({Parts[0], R});
}

TEST(GradCheck, Gather) {
  GradCheck C;
  ValueId Table = C.param({5, 3});
  // Repeated and negative indices accumulate into the same rows.
  ValueId Idx = C.ints({2, 3}, {0, 4, 0, -1, 2, 0});
  C.check(C.op("Gather", {Table, Idx}));
  GradCheck D;
  ValueId X = D.param({2, 4, 3});
  D.check(D.op("Gather", {X, D.ints({}, {2})}, Attributes().set("axis", 1)));
}

TEST(GradCheck, MatMul) {
  GradCheck C;
  C.check(C.op("MatMul", {C.param({3, 4}), C.param({4, 5})}));
  GradCheck D; // A weight shared across the batch.
  D.check(D.op("MatMul", {D.param({2, 3, 4}), D.param({4, 5})}));
  GradCheck E; // Batched with broadcast batch dims.
  E.check(E.op("MatMul", {E.param({2, 1, 3, 4}), E.param({3, 4, 2})}));
}

TEST(GradCheck, SoftmaxAndReduce) {
  for (const char *Op : {"Softmax", "LogSoftmax"}) {
    SCOPED_TRACE(Op);
    GradCheck C;
    C.check(C.op(Op, {C.param({3, 5})}, Attributes().set("axis", -1)));
  }
  for (const char *Op : {"ReduceSum", "ReduceMean"}) {
    SCOPED_TRACE(Op);
    GradCheck C;
    Attributes A;
    A.set("axes", std::vector<int64_t>{0, 2}).set("keepdims", 0);
    C.check(C.op(Op, {C.param({2, 3, 4})}, A));
  }
}

TEST(GradCheck, Norms) {
  GradCheck C;
  Attributes A;
  A.set("axis", -1).setFloat("epsilon", 1e-5);
  std::vector<ValueId> Out = C.op(
      "LayerNormalization", {C.param({3, 8}), C.param({8}), C.param({8})}, A,
      3);
  C.check({Out[0]});
  GradCheck D;
  std::vector<ValueId> R =
      D.op("dsc.RMSNorm", {D.param({2, 3, 8}), D.param({8})}, A, 2);
  D.check({R[0]});
}

TEST(GradCheck, Rotary) {
  // Tables broadcast along batch and heads, with halves that differ (HF's
  // repeat them, which would hide a gradient reading the wrong half).
  GradCheck C;
  std::vector<float> Cos, Sin;
  for (int T = 0; T < 3; ++T)
    for (int I = 0; I < 6; ++I) {
      Cos.push_back(std::cos(0.3f * float(T * 6 + I)));
      Sin.push_back(std::sin(0.7f * float(T * 6 + I) + 0.1f));
    }
  ValueId X = C.param({2, 2, 3, 6});
  ValueId CosT = C.constant(HostTensor::fromFloats({1, 1, 3, 6}, Cos));
  ValueId SinT = C.constant(HostTensor::fromFloats({3, 6}, Sin));
  C.check(C.op("dsc.Rotary", {X, CosT, SinT}));
}

TEST(GradCheck, SwiGLU) {
  GradCheck C;
  ValueId G = C.param({2, 3, 4}), U = C.param({2, 3, 4});
  C.check(C.op("dsc.SwiGLU", {G, U}));
}

TEST(GradCheck, Dropout) {
  GradCheck C;
  Attributes A;
  A.set("dsc_stream", 3);
  ValueId Ratio = C.constant(HostTensor::scalar(DType::F32, 0.3));
  ValueId Train = C.constant(HostTensor::scalar(DType::U8, 1));
  C.check({C.op("Dropout", {C.param({6, 7}), Ratio, Train}, A)[0]});
}

TEST(GradCheck, Attention) {
  for (int Causal : {0, 1}) {
    SCOPED_TRACE(Causal ? "causal" : "full");
    GradCheck C;
    Attributes A;
    A.set("causal", Causal).setFloat("scale", 0.4);
    // Grouped-query: 4 query heads share 2 key/value heads.
    ValueId Q = C.param({2, 4, 5, 3}), K = C.param({2, 2, 5, 3}),
            V = C.param({2, 2, 5, 2});
    C.check({C.op("dsc.Attention", {Q, K, V}, A, 2)[0]});
  }
  GradCheck C; // A padding-style additive bias.
  std::vector<float> Bias(2 * 1 * 3 * 4, 0.0f);
  Bias[3] = Bias[7] = -1e9f;
  ValueId B = C.constant(HostTensor::fromFloats({2, 1, 3, 4}, Bias));
  C.check({C.op("dsc.Attention",
                {C.param({2, 2, 3, 3}), C.param({2, 2, 4, 3}),
                 C.param({2, 2, 4, 3}), B},
                {}, 2)[0]});
}

TEST(GradCheck, CrossEntropy) {
  GradCheck C;
  ValueId Logits = C.param({2, 3, 5});
  ValueId Targets = C.constant(
      HostTensor::fromInts(DType::I32, {2, 3}, {4, 0, -100, 2, 2, 1}));
  C.check({C.op("dsc.CrossEntropy", {Logits, Targets},
                Attributes().set("ignore_index", -100), 2)[0]});
}

TEST(GradCheck, ConvPatches) {
  // What the importer makes of a patch projection: checked end to end by
  // the ViT fixtures; here the reshape/transpose chain of its gradient.
  GradCheck C;
  ValueId X = C.param({1, 2, 4, 4});
  ValueId P = C.op("Reshape", {X, C.ints({6}, {1, 2, 2, 2, 2, 2})})[0];
  ValueId T = C.op("Transpose", {P},
                   Attributes().set("perm", std::vector<int64_t>{0, 2, 4, 1, 3, 5}))[0];
  ValueId Rows = C.op("Reshape", {T, C.ints({3}, {1, 4, 8})})[0];
  C.check(C.op("MatMul", {Rows, C.param({8, 3})}));
}

} // namespace
