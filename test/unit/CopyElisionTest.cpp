//===- CopyElisionTest.cpp - Views through a copy; overlap of views -------===//
//
// compute::elideCopies rests on two questions about strided views: where
// a view of a copy's source lands in its destination, and whether two
// views of one value can share an element. Both are answered here on
// the layouts the elision meets in transformers, and on the ones it must
// refuse.
//
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Kernels.h"

#include "gtest/gtest.h"

using namespace dsc;
using namespace dsc::compute;
using plan::TensorRef;

namespace {

TensorRef view(uint32_t Value, uint64_t Offset, std::vector<int64_t> Shape,
               std::vector<int64_t> Strides) {
  return {Value, Offset, std::move(Shape), std::move(Strides)};
}

TEST(CopyElision, AttentionOutputWritesTheTransposedRows) {
  // O is [B=2, H=3, T=4, D=8]; the copy reads it as [B, T, H, D] and
  // writes [B, T, H * D] rows. Attention writing O densely lands there
  // with strides [T*H*D, D, H*D, 1].
  TensorRef In = view(0, 0, {2, 4, 3, 8}, {96, 8, 32, 1});
  TensorRef Out = view(1, 0, {2, 4, 3, 8}, {96, 24, 8, 1});
  std::optional<TensorRef> R =
      viewThroughCopy(view(0, 0, {2, 3, 4, 8}, {96, 32, 8, 1}), In, Out, 192);
  ASSERT_TRUE(R);
  EXPECT_EQ(R->Value, 1u);
  EXPECT_EQ(R->Offset, 0u);
  EXPECT_EQ(R->Strides, (std::vector<int64_t>{96, 8, 24, 1}));
}

TEST(CopyElision, AConcatenatedPartKeepsItsOffset) {
  // dK [2, 4, 24] copied into columns 24..47 of a [2, 4, 72] gradient.
  TensorRef In = view(0, 0, {2, 4, 24}, {96, 24, 1});
  TensorRef Out = view(1, 24, {2, 4, 24}, {288, 72, 1});
  std::optional<TensorRef> R = viewThroughCopy(
      view(0, 0, {2, 3, 4, 8}, {96, 8, 24, 1}), In, Out, 192);
  ASSERT_TRUE(R);
  EXPECT_EQ(R->Offset, 24u);
  EXPECT_EQ(R->Strides, (std::vector<int64_t>{288, 8, 72, 1}));
}

TEST(CopyElision, ASliceOfTheSourceMovesItsOffset) {
  // A [4, 6] source copied transposed into [6, 4]; rows 1 and 2 of the
  // source are columns 1 and 2 of the destination.
  TensorRef In = view(0, 0, {6, 4}, {1, 6});
  TensorRef Out = view(1, 0, {6, 4}, {4, 1});
  std::optional<TensorRef> R =
      viewThroughCopy(view(0, 6, {2, 6}, {6, 1}), In, Out, 24);
  ASSERT_TRUE(R);
  EXPECT_EQ(R->Offset, 1u);
  EXPECT_EQ(R->Strides, (std::vector<int64_t>{1, 4}));
}

TEST(CopyElision, RefusesWhatStridesCannotSay) {
  TensorRef In = view(0, 0, {6, 4}, {1, 6});
  TensorRef Out = view(1, 0, {6, 4}, {4, 1});
  // The source read flat runs across the transposed dims.
  EXPECT_FALSE(viewThroughCopy(view(0, 0, {24}, {1}), In, Out, 24));
  // A copy that reads part of its source, or an element twice.
  EXPECT_FALSE(viewThroughCopy(view(0, 0, {6}, {1}), view(0, 0, {3}, {1}),
                               view(1, 0, {3}, {1}), 6));
  EXPECT_FALSE(viewThroughCopy(view(0, 0, {4}, {1}),
                               view(0, 0, {2, 4}, {0, 1}),
                               view(1, 0, {2, 4}, {4, 1}), 4));
}

TEST(CopyElision, OverlapOfViews) {
  // Parts of a concatenation along the last dim never meet.
  TensorRef Q = view(1, 0, {2, 4, 24}, {288, 72, 1});
  TensorRef K = view(1, 24, {2, 4, 24}, {288, 72, 1});
  EXPECT_FALSE(mayOverlap(Q, K));
  EXPECT_TRUE(mayOverlap(Q, Q));
  // The same part seen as heads: the dims merge into the same layout.
  TensorRef KHeads = view(1, 24, {2, 3, 4, 8}, {288, 8, 72, 1});
  EXPECT_FALSE(mayOverlap(Q, KHeads));
  EXPECT_TRUE(mayOverlap(K, KHeads));
  // A fill of the whole value meets every part; other values never.
  EXPECT_TRUE(mayOverlap(view(1, 0, {576}, {1}), K));
  EXPECT_FALSE(mayOverlap(view(2, 0, {576}, {1}), K));
  // Every other row against the rows between.
  EXPECT_FALSE(mayOverlap(view(3, 0, {4, 8}, {16, 1}),
                          view(3, 8, {4, 8}, {16, 1})));
  EXPECT_TRUE(mayOverlap(view(3, 0, {4, 8}, {16, 1}),
                         view(3, 4, {4, 8}, {16, 1})));
}

/// A kernel program of pointwise kernels over values of 192 elements.
/// A pointwise copy, and a sigmoid.
plan::PointwiseAttrs copy() {
  plan::PointwiseAttrs P;
  P.Registers = 1;
  P.Results = {0};
  return P;
}
plan::PointwiseAttrs sigmoid() {
  plan::PointwiseAttrs P;
  P.Registers = 2;
  P.Program = {{plan::PointwiseOp::Sigmoid, 1, 0, 0, 0}};
  P.Results = {1};
  return P;
}

struct Program {
  KernelProgram P;
  uint32_t value(plan::ValueKind Kind = plan::ValueKind::Activation) {
    plan::Value V;
    V.Name = "v" + std::to_string(P.Values.size());
    V.Kind = Kind;
    V.Elems = 192;
    P.Values.push_back(V);
    return uint32_t(P.Values.size() - 1);
  }
  void kernel(std::vector<TensorRef> In, std::vector<TensorRef> Out,
              plan::KernelAttrs Attrs = copy()) {
    plan::Kernel K;
    K.Attrs = std::move(Attrs);
    K.Inputs = std::move(In);
    K.Outputs = std::move(Out);
    P.Kernels.push_back(K);
    P.Node.push_back(uint32_t(P.Node.size()));
  }
};

TEST(CopyElision, TheWriterAddressesTheDestination) {
  Program G;
  uint32_t A = G.value(plan::ValueKind::Input), X = G.value(), Y = G.value();
  TensorRef Dense = view(0, 0, {2, 3, 4, 8}, {96, 32, 8, 1});
  G.kernel({view(A, 0, {2, 3, 4, 8}, {96, 32, 8, 1})},
           {view(X, 0, {2, 3, 4, 8}, {96, 32, 8, 1})}, sigmoid());
  G.kernel({view(X, 0, {2, 4, 3, 8}, {96, 8, 32, 1})},
           {view(Y, 0, {2, 4, 3, 8}, {96, 24, 8, 1})});
  G.kernel({view(Y, 0, {8, 24}, {24, 1})}, {view(A, 0, {8, 24}, {24, 1})});
  (void)Dense;
  EXPECT_EQ(elideCopies(G.P), 1u);
  ASSERT_EQ(G.P.Kernels.size(), 2u);
  ASSERT_EQ(G.P.Values.size(), 2u); // X is gone; Y is now value 1.
  EXPECT_EQ(G.P.Kernels[0].Outputs[0].Value, 1u);
  EXPECT_EQ(G.P.Kernels[0].Outputs[0].Strides,
            (std::vector<int64_t>{96, 8, 24, 1}));
  EXPECT_EQ(G.P.Kernels[1].Inputs[0].Value, 1u);
  EXPECT_EQ(G.P.Node, (std::vector<uint32_t>{0, 2}));
}

TEST(CopyElision, KeepsCopiesOthersWouldClobber) {
  // A fill of the destination between the write and the copy (the
  // gradient of a slice: zeros, then the window) must not erase it.
  Program G;
  uint32_t A = G.value(plan::ValueKind::Input), X = G.value(), Y = G.value();
  G.kernel({view(A, 0, {96}, {1})}, {view(X, 0, {96}, {1})},
           sigmoid());
  G.kernel({}, {view(Y, 0, {192}, {1})}, plan::FillAttrs{});
  G.kernel({view(X, 0, {96}, {1})}, {view(Y, 96, {96}, {1})});
  EXPECT_EQ(elideCopies(G.P), 0u);
  EXPECT_EQ(G.P.Kernels.size(), 3u);
  // A product writing the source cannot take a strided destination.
  Program H;
  uint32_t B = H.value(plan::ValueKind::Input), X2 = H.value(), Y2 = H.value();
  H.kernel({view(B, 0, {96}, {1})}, {view(X2, 0, {96}, {1})}, plan::GemmAttrs{});
  H.kernel({view(X2, 0, {96}, {1})}, {view(Y2, 96, {96}, {1})});
  EXPECT_EQ(elideCopies(H.P), 0u);
}

TEST(CopyElision, KeepsAConcatenationWhosePartsWouldBeWrittenApart) {
  // Y = concat(X1, broadcast X2): X2's copy broadcasts, so it stays, in
  // the concatenation's node; eliding X1's copy alone would have Y
  // written by two nodes, which the memory plan would see as two
  // lifetimes with a gap between them. Both copies stay.
  Program G;
  uint32_t A = G.value(plan::ValueKind::Input), X1 = G.value(),
           X2 = G.value(), Y = G.value();
  G.kernel({view(A, 0, {96}, {1})}, {view(X1, 0, {96}, {1})},
           sigmoid());
  G.kernel({view(A, 0, {48}, {1})}, {view(X2, 0, {48}, {1})},
           sigmoid());
  G.kernel({view(X1, 0, {96}, {1})}, {view(Y, 0, {96}, {1})});
  G.kernel({view(X2, 0, {2, 48}, {0, 1})}, {view(Y, 96, {2, 48}, {48, 1})});
  G.P.Node = {0, 1, 2, 2};
  EXPECT_EQ(elideCopies(G.P), 0u);
  EXPECT_EQ(G.P.Kernels.size(), 4u);
  EXPECT_EQ(G.P.Kernels[2].Inputs[0].Value, X1);
}

} // namespace
