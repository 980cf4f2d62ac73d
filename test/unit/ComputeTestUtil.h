//===- ComputeTestUtil.h - Shared by the compute unit tests -----*- C++ -*-===//

#ifndef DSC_TEST_COMPUTETESTUTIL_H
#define DSC_TEST_COMPUTETESTUTIL_H

#include "dsc/Compute/Import.h"
#include "dsc/Compute/Interpreter.h"
#include "dsc/Compute/Passes.h"
#include "dsc/Graph/Model.h"
#include "dsc/Graph/Parameters.h"
#include "dsc/SafeTensors.h"

#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <cctype>
#include <cmath>
#include <map>

namespace dsc::compute {

/// True on success; a failure is reported with its message.
inline bool ok(llvm::Error E) {
  if (!E)
    return true;
  ADD_FAILURE() << llvm::toString(std::move(E));
  return false;
}

/// The gunzipped exports (the build unpacks test/Compute/Inputs there).
inline std::string inputPath(const std::string &Name) {
  return std::string(DSC_COMPUTE_INPUTS) + "/" + Name;
}
inline std::string fixturePath(const std::string &Name) {
  return std::string(DSC_COMPUTE_FIXTURES) + "/" + Name;
}

/// Every tensor of a safetensors file, as host tensors.
inline std::map<std::string, HostTensor> readSafeTensors(const std::string &P) {
  std::map<std::string, HostTensor> Out;
  auto Buffer = llvm::MemoryBuffer::getFile(P, false, false);
  EXPECT_TRUE(bool(Buffer)) << P;
  if (!Buffer)
    return Out;
  llvm::StringRef B = (*Buffer)->getBuffer();
  safetensors::Header H;
  std::string Error;
  EXPECT_TRUE(safetensors::readHeader(B.data(), B.size(), B.size(), H, Error))
      << Error;
  for (const safetensors::TensorInfo &T : H.Tensors) {
    const char *Data = B.data() + H.DataStart + T.Begin;
    if (T.DType == "F32")
      Out[T.Name] = decodeTensor(DType::F32, T.Shape, Data, StorageType::F32);
    else if (T.DType == "I64")
      Out[T.Name] = decodeTensor(DType::I64, T.Shape, Data, StorageType::I64);
    else
      ADD_FAILURE() << "fixture tensor " << T.Name << " is " << T.DType;
  }
  return Out;
}

struct LoweredModel {
  Model M;
  ModelFacts Facts;
  Graph G;
  std::string Error;
};

/// Imports an ONNX export at [Batch, Seq] (Seq 0: no sequence dim) and runs
/// the compute passes.
inline LoweredModel lowerModel(const std::string &Path, int64_t Batch,
                               int64_t Seq, LossKind Loss, bool Fuse) {
  LoweredModel L;
  llvm::Expected<Model> M = importOnnx(Path);
  if (!M) {
    L.Error = llvm::toString(M.takeError());
    return L;
  }
  L.M = std::move(*M);
  llvm::Expected<ModelFacts> F = analyzeModel(L.M, {});
  if (!F) {
    L.Error = llvm::toString(F.takeError());
    return L;
  }
  L.Facts = std::move(*F);
  ImportOptions O;
  O.MicroBatch = Batch;
  if (Seq)
    O.SeqLen = Seq;
  llvm::Expected<Graph> G = importGraph(L.M, L.Facts, O);
  if (!G) {
    L.Error = llvm::toString(G.takeError());
    return L;
  }
  L.G = std::move(*G);
  PipelineOptions P;
  P.Loss = Loss;
  P.Fuse = Fuse;
  if (llvm::Error E = runPipeline(L.G, P)) {
    L.Error = llvm::toString(std::move(E));
    L.G.Loss = NoValue;
  }
  return L;
}

/// Sets every parameter from the weights the export carries.
inline void loadWeights(Interpreter &I, const LoweredModel &L) {
  for (const ParamInfo &P : L.G.Params) {
    const Initializer *Init = L.M.initializer(P.Name);
    ASSERT_NE(Init, nullptr) << P.Name;
    llvm::Expected<std::vector<char>> Bytes = readInitializer(L.M, *Init);
    ASSERT_TRUE(bool(Bytes)) << llvm::toString(Bytes.takeError());
    ASSERT_EQ(Init->Type, dsc::DType::Float) << P.Name;
    HostTensor T = decodeTensor(DType::F32, Init->Dims, Bytes->data(),
                                StorageType::F32);
    ASSERT_TRUE(ok(I.set(P.Value, std::move(T)))) << P.Name;
  }
}

/// Whether A equals B to Rel relative to ||B||. A gradient that is zero
/// in exact arithmetic (a key projection's bias: softmax ignores a shift
/// shared by a row) is rounding noise in both, so a floor of 1e-7 per
/// element applies.
inline ::testing::AssertionResult close(const HostTensor &A,
                                        const HostTensor &B, double Rel) {
  std::vector<double> X = A.values(), Y = B.values();
  if (X.size() != Y.size())
    return ::testing::AssertionFailure() << "sizes differ";
  double Diff = 0, Norm = 0;
  for (size_t I = 0; I < X.size(); ++I) {
    Diff += (X[I] - Y[I]) * (X[I] - Y[I]);
    Norm += Y[I] * Y[I];
  }
  Diff = std::sqrt(Diff), Norm = std::sqrt(Norm);
  if (Diff <= Rel * Norm + 1e-7 * std::sqrt(double(X.size())))
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "||ours - pytorch|| = " << Diff << ", ||pytorch|| = " << Norm;
}

/// The fixture's name for a parameter: HF deduplicates a tied weight
/// under the first module's name.
inline std::string hfName(const std::string &Name,
                          const std::map<std::string, HostTensor> &Fixture) {
  if (Fixture.count("grad." + Name))
    return Name;
  static const std::map<std::string, std::string> Tied = {
      {"lm_head.weight", "transformer.wte.weight"},
      {"cls.predictions.decoder.weight",
       "bert.embeddings.word_embeddings.weight"},
      {"cls.predictions.decoder.bias", "cls.predictions.bias"}};
  auto It = Tied.find(Name);
  return It == Tied.end() ? Name : It->second;
}

/// A test export and the model whose fixture it is checked against.
struct ExportCase {
  const char *Export, *Model;
  LossKind Loss;
};

/// The export's name as a GoogleTest parameter name.
inline std::string
exportCaseName(const ::testing::TestParamInfo<ExportCase> &I) {
  std::string S = I.param.Export;
  for (char &C : S)
    if (!isalnum(C))
      C = '_';
  return S;
}

} // namespace dsc::compute

#endif
