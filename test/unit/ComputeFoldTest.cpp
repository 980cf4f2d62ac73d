//===- ComputeFoldTest.cpp - Folding large masks from small inputs --------===//
//
// A real export builds its attention mask per batch row from position ids:
// [B, 1, T, 1] == [B, 1, 1, T] gives [B, 1, T, T]. When every row of the
// inputs holds the same values, folding computes one row and returns it
// broadcast (stride 0 along the batch), with the same elements as the full
// computation; when the rows differ, it computes them all.
//
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Ops.h"

#include <gtest/gtest.h>

using namespace dsc::compute;
using dsc::plan::DType;

namespace {

HostTensor ids(int64_t B, int64_t T, bool RowsDiffer, bool Column) {
  std::vector<int64_t> V;
  for (int64_t R = 0; R < B; ++R)
    for (int64_t I = 0; I < T; ++I)
      V.push_back(I / 3 + (RowsDiffer ? R : 0)); // Documents of 3 tokens.
  Shape S = Column ? Shape{B, 1, T, 1} : Shape{B, 1, 1, T};
  return HostTensor::fromInts(DType::I64, S, std::move(V));
}

HostTensor foldEqual(const HostTensor &A, const HostTensor &B) {
  Graph G;
  ValueId X = G.addConstant(A), Y = G.addConstant(B);
  auto Out = G.addNode("Equal", {X, Y}, {}, 1);
  EXPECT_TRUE(bool(Out));
  if (!Out) {
    llvm::consumeError(Out.takeError());
    return {};
  }
  std::vector<HostTensor> R;
  llvm::Error E = evaluate(G, G.Nodes.back(),
                           {G.Values[X].Data.get(), G.Values[Y].Data.get()}, R);
  EXPECT_FALSE(bool(E));
  llvm::consumeError(std::move(E));
  return R.at(0);
}

} // namespace

TEST(ComputeFold, SameRowsFoldOnceAndBroadcast) {
  const int64_t B = 16, T = 128; // 262,144 elements: worth compacting.
  HostTensor M = foldEqual(ids(B, T, false, true), ids(B, T, false, false));
  ASSERT_EQ(M.shape(), (Shape{B, 1, T, T}));
  EXPECT_EQ(M.strides()[0], 0); // One row of storage.
  for (int64_t R : {int64_t(0), B - 1})
    for (int64_t I : {int64_t(0), int64_t(5), T - 1})
      for (int64_t J : {int64_t(0), int64_t(4), T - 1}) {
        int64_t Index[4] = {R, 0, I, J};
        EXPECT_EQ(M.at(Index), I / 3 == J / 3 ? 1.0 : 0.0);
      }
}

TEST(ComputeFold, DifferentRowsAreComputedEach) {
  const int64_t B = 16, T = 128;
  HostTensor Col = ids(B, T, true, true), Row = ids(B, T, false, false);
  HostTensor M = foldEqual(Col, Row);
  EXPECT_NE(M.strides()[0], 0);
  // Row 2's documents are shifted by 2: token 6 (document 4) meets token 12.
  int64_t Index[4] = {2, 0, 6, 12};
  EXPECT_EQ(M.at(Index), 1.0);
  int64_t Other[4] = {0, 0, 6, 12};
  EXPECT_EQ(M.at(Other), 0.0);
}

// Shapes no GPU could hold come from broken files (the ONNX fuzzer found
// them); they are refused with the node's name, never multiplied into an
// int64 overflow.
TEST(ComputeFold, ImpossibleShapesAreRefused) {
  auto Refusal = [](const char *Op, HostTensor ShapeArg) {
    Graph G;
    ValueId X = G.addConstant(
        HostTensor::fromInts(DType::I64, Shape{2}, {1, 2}));
    ValueId S = G.addConstant(std::move(ShapeArg));
    auto Out = G.addNode(Op, {X, S}, {}, 1);
    EXPECT_FALSE(bool(Out)) << Op;
    std::string Message = Out ? "" : llvm::toString(Out.takeError());
    EXPECT_EQ(G.Nodes.size(), 0u) << "no half-built node is left behind";
    return Message;
  };
  int64_t Big = int64_t(1) << 30;
  EXPECT_NE(Refusal("Expand", HostTensor::fromInts(DType::I64, Shape{3},
                                                   {Big, Big, 2}))
                .find("more than 2^48 elements"),
            std::string::npos);
  EXPECT_NE(Refusal("Reshape", HostTensor::fromInts(DType::I64, Shape{3},
                                                    {Big << 20, Big << 20, -1}))
                .find("more elements than int64 holds"),
            std::string::npos);
}

// Trilu keeps, in each row of each matrix, the columns on its side of the
// diagonal shifted by k: dense inputs of both element kinds element by
// element against the definition, and a value broadcast over the square
// (a causal model's mask) read once.
TEST(ComputeFold, TriluKeepsOneSideOfTheDiagonal) {
  auto Trilu = [](const HostTensor &A, int64_t K, bool Upper) {
    Graph G;
    ValueId X = G.addConstant(A);
    ValueId KV = G.addConstant(HostTensor::fromInts(DType::I64, Shape{}, {K}));
    Attributes Attrs;
    Attrs.set("upper", int64_t(Upper));
    auto Out = G.addNode("Trilu", {X, KV}, Attrs, 1);
    EXPECT_TRUE(bool(Out));
    if (!Out) {
      llvm::consumeError(Out.takeError());
      return HostTensor();
    }
    std::vector<HostTensor> R;
    llvm::Error E = evaluate(
        G, G.Nodes.back(), {G.Values[X].Data.get(), G.Values[KV].Data.get()}, R);
    EXPECT_FALSE(bool(E));
    llvm::consumeError(std::move(E));
    return R.at(0);
  };
  const int64_t B = 2, Rows = 3, Cols = 5;
  std::vector<float> F;
  std::vector<int64_t> I;
  for (int64_t N = 0; N < B * Rows * Cols; ++N) {
    F.push_back(float(N) + 0.5f);
    I.push_back(N + 1);
  }
  HostTensor Dense[] = {HostTensor::fromFloats(Shape{B, Rows, Cols}, F),
                        HostTensor::fromInts(DType::I64, Shape{B, Rows, Cols}, I)};
  HostTensor Broadcast =
      HostTensor::scalar(DType::F32, -7.0).expanded(Shape{B, Rows, Cols});
  for (bool Upper : {false, true})
    for (int64_t K : {int64_t(-4), int64_t(-1), int64_t(0), int64_t(2), int64_t(6)})
      for (const HostTensor &X : {Dense[0], Dense[1], Broadcast}) {
        HostTensor Y = Trilu(X, K, Upper);
        ASSERT_EQ(Y.shape(), X.shape());
        for (int64_t N = 0; N < X.numel(); ++N) {
          int64_t Col = N % Cols, Row = (N / Cols) % Rows;
          bool Keep = Upper ? Col - Row >= K : Col - Row <= K;
          EXPECT_EQ(Y.at(N), Keep ? X.at(N) : 0.0)
              << "element " << N << ", k " << K << (Upper ? ", upper" : "");
        }
      }
}
