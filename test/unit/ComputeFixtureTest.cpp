//===- ComputeFixtureTest.cpp - The reference interpreter against PyTorch -===//
//
// Tiny GPT-2, Llama (grouped-query attention, RMSNorm, rotary, SwiGLU,
// untied head), BERT (masked LM) and ViT (patch projection, classification)
// were exported on the GPU machine by both exporters with their weights,
// and PyTorch computed their loss and every parameter's gradient on one
// batch in fp32 (utils/make_training_fixtures.py). dsc imports each export,
// runs its passes (with and without fusion), and its interpreter must give
// the same loss and gradients to 1e-4 relative.
//
//===----------------------------------------------------------------------===//

#include "ComputeTestUtil.h"

#include "dsc/Compute/Interpreter.h"
#include "dsc/Compute/Passes.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace dsc;
using namespace dsc::compute;

namespace {



void checkAgainstPyTorch(const std::string &Export, const std::string &Model,
                         LossKind Loss, bool Fuse) {
  SCOPED_TRACE(Export + (Fuse ? " (fused)" : " (unfused)"));
  std::map<std::string, HostTensor> Fixture =
      readSafeTensors(fixturePath(Model + ".fixture.safetensors"));
  ASSERT_TRUE(Fixture.count("loss"));
  bool Image = Fixture.count("pixel_values");
  const HostTensor &X = Fixture[Image ? "pixel_values" : "input_ids"];
  LoweredModel L = lowerModel(inputPath(Export + ".onnx"), X.shape()[0],
                              Image ? 0 : X.shape()[1], Loss, Fuse);
  ASSERT_TRUE(L.G.Loss != NoValue) << L.Error;

  Interpreter I(L.G);
  loadWeights(I, L);
  ASSERT_TRUE(ok(I.set(L.G.Inputs[0], X.cast(L.G.Values[L.G.Inputs[0]].Type))));
  ASSERT_TRUE(ok(I.set(L.G.Targets[0], Fixture["labels"].cast(plan::DType::I32))));
  ASSERT_TRUE(ok(I.run()));

  double Want = Fixture["loss"].at(0), Got = I.value(L.G.Loss).at(0);
  EXPECT_NEAR(Got, Want, 1e-4 * std::fabs(Want)) << "loss";
  unsigned Checked = 0;
  for (const ParamInfo &P : L.G.Params) {
    std::string Name = hfName(P.Name, Fixture);
    auto It = Fixture.find("grad." + Name);
    ASSERT_NE(It, Fixture.end()) << "PyTorch has no gradient for " << P.Name;
    ASSERT_NE(P.Grad, NoValue) << P.Name << " got no gradient";
    EXPECT_TRUE(close(I.value(P.Grad), It->second, 1e-4))
        << "gradient of " << P.Name;
    ++Checked;
  }
  // Every parameter PyTorch trains is one of the graph's.
  unsigned Want2 = 0;
  for (const auto &[K, V] : Fixture)
    Want2 += llvm::StringRef(K).startswith("grad.");
  EXPECT_EQ(Checked, Want2);
}

class MatchesPyTorch : public ::testing::TestWithParam<ExportCase> {};

TEST_P(MatchesPyTorch, Unfused) {
  checkAgainstPyTorch(GetParam().Export, GetParam().Model, GetParam().Loss,
                      false);
}
TEST_P(MatchesPyTorch, Fused) {
  checkAgainstPyTorch(GetParam().Export, GetParam().Model, GetParam().Loss,
                      true);
}

INSTANTIATE_TEST_SUITE_P(
    Exports, MatchesPyTorch,
    ::testing::Values(
        ExportCase{"gpt2-train.dynamo", "gpt2-train", LossKind::CausalLM},
        ExportCase{"llama-train.dynamo", "llama-train", LossKind::CausalLM},
        ExportCase{"bert-train.dynamo", "bert-train", LossKind::MaskedLM},
        ExportCase{"bert-train.torchscript", "bert-train", LossKind::MaskedLM},
        ExportCase{"vit-train.dynamo", "vit-train",
             LossKind::SequenceClassification},
        ExportCase{"vit-train.torchscript", "vit-train",
             LossKind::SequenceClassification}),
    exportCaseName);

} // namespace

//===----------------------------------------------------------------------===//
// The same, through kernel selection: the plan's values, views and kernels
// run by the reference executor give PyTorch's loss and gradients.
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Kernels.h"
#include "dsc/ReferenceExecutor.h"

namespace {

void checkKernelsAgainstPyTorch(const std::string &Export,
                                const std::string &Model, LossKind Loss) {
  SCOPED_TRACE(Export + " (kernels)");
  std::map<std::string, HostTensor> Fixture =
      readSafeTensors(fixturePath(Model + ".fixture.safetensors"));
  bool Image = Fixture.count("pixel_values");
  const HostTensor &X = Fixture[Image ? "pixel_values" : "input_ids"];
  LoweredModel L = lowerModel(inputPath(Export + ".onnx"), X.shape()[0],
                              Image ? 0 : X.shape()[1], Loss, true);
  ASSERT_TRUE(L.G.Loss != NoValue) << L.Error;
  KernelOptions O;
  O.Activation = plan::DType::F32;
  O.TensorOf = [](const ParamInfo &) { return plan::NoIndex; };
  llvm::Expected<KernelProgram> P = selectKernels(L.G, O);
  if (!P)
    FAIL() << toString(P.takeError());
  EXPECT_TRUE(P->Training.Missing.empty())
      << (P->Training.Missing.empty() ? "" : P->Training.Missing[0]);

  reference::Executor E(P->Values, P->Constants);
  auto Fill = [&](ValueId V, const HostTensor &T) {
    std::vector<float> F = T.floats();
    E.storage(P->ValueOf[V]).assign(F);
  };
  Interpreter Weights(L.G); // Only to decode the export's weights.
  loadWeights(Weights, L);
  for (const ParamInfo &Pi : L.G.Params)
    Fill(Pi.Value, Weights.value(Pi.Value));
  Fill(L.G.Inputs[0], X);
  Fill(L.G.Targets[0], Fixture["labels"]);
  for (const plan::Kernel &K : P->Kernels) {
    std::string Problem = E.run(K);
    ASSERT_EQ(Problem, "") << K.Name;
  }
  double Want = Fixture["loss"].at(0);
  double Got = E.storage(P->Training.LossValue)[0];
  EXPECT_NEAR(Got, Want, 1e-4 * std::fabs(Want)) << "loss";
  for (const ParamInfo &Pi : L.G.Params) {
    auto It = Fixture.find("grad." + hfName(Pi.Name, Fixture));
    ASSERT_NE(It, Fixture.end());
    uint32_t V = P->ValueOf[Pi.Grad];
    ASSERT_NE(V, plan::NoIndex) << Pi.Name;
    EXPECT_EQ(P->Values[V].Kind, plan::ValueKind::ParamGrad) << Pi.Name;
    std::vector<float> G = E.storage(V).copy();
    HostTensor Ours = HostTensor::fromFloats(It->second.shape(),
                                             std::vector<float>(G.begin(), G.end()));
    EXPECT_TRUE(close(Ours, It->second, 1e-4)) << "gradient of " << Pi.Name;
  }
}

TEST_P(MatchesPyTorch, Kernels) {
  checkKernelsAgainstPyTorch(GetParam().Export, GetParam().Model,
                             GetParam().Loss);
}

} // namespace
