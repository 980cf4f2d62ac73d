//===- PlanProgramTest.cpp - A whole plan, run as dsrun runs it ------------===//
//
// dsc plans the tiny exports of ComputeFixtureTest (fp32, one rank), and
// the reference executor runs the plan's instruction stream in program
// order -- forwards, recomputations of checkpointed layers, backwards --
// with every value where the memory plan puts it, in one shared arena
// that starts as NaN. Loss and parameter gradients must still equal
// PyTorch's: a lifetime that ends too early, two live values placed on
// the same bytes, or a checkpointed layer whose recomputation misses a
// value would all change them.
//
//===----------------------------------------------------------------------===//

#include "ComputeTestUtil.h"

#include "dsc/Config/ConfigView.h"
#include "dsc/Config/Json.h"
#include "dsc/Plan/Planner.h"
#include "dsc/PlanCheck.h"
#include "dsc/ReferenceExecutor.h"

#include "gtest/gtest.h"

#include <cmath>

using namespace dsc;
using namespace dsc::compute;

namespace {

struct StepSetup {
  uint32_t Stage = 1;
  uint32_t GradAccum = 1;
  bool CheckpointLayers = false;
  bool KeepCopies = false;
  bool KeepPointwise = false;
};

struct StepResult {
  double Loss = 0;
  std::map<std::string, std::vector<float>> Grads; ///< By tensor name.
  /// Forward instructions that recompute an op, and the bytes of saved
  /// activations live when the backward starts.
  uint32_t Recomputes = 0;
  uint64_t ActivationBytesAtBackward = 0;
  size_t Kernels = 0;
};

/// The weights the export carries, by initializer name.
std::vector<float> exportedWeight(const Model &M, const std::string &Name) {
  const Initializer *Init = M.initializer(Name);
  EXPECT_NE(Init, nullptr) << Name;
  if (!Init)
    return {};
  llvm::Expected<std::vector<char>> Bytes = readInitializer(M, *Init);
  EXPECT_TRUE(bool(Bytes)) << llvm::toString(Bytes.takeError());
  if (!Bytes)
    return {};
  return decodeTensor(compute::DType::F32, Init->Dims, Bytes->data(), StorageType::F32)
      .floats();
}

/// Plans the export and runs one optimizer step's compute instructions.
StepResult runStep(const std::string &Export,
                   std::map<std::string, HostTensor> &Fixture, LossKind Loss,
                   const StepSetup &S) {
  StepResult R;
  bool Image = Fixture.count("pixel_values");
  const HostTensor &X = Fixture[Image ? "pixel_values" : "input_ids"];
  llvm::Expected<Model> M = importOnnx(inputPath(Export + ".onnx"));
  if (!M) {
    ADD_FAILURE() << llvm::toString(M.takeError());
    return R;
  }
  llvm::Expected<ModelFacts> F = analyzeModel(*M, {});
  if (!F) {
    ADD_FAILURE() << llvm::toString(F.takeError());
    return R;
  }
  std::string Config =
      "{\"train_micro_batch_size_per_gpu\": " + std::to_string(X.shape()[0]) +
      ", \"gradient_accumulation_steps\": " + std::to_string(S.GradAccum) +
      ", \"zero_optimization\": {\"stage\": " + std::to_string(S.Stage) +
      ", \"reduce_bucket_size\": 65536, \"allgather_bucket_size\": 65536"
      ", \"stage3_prefetch_bucket_size\": 65536}}";
  JsonParseResult J = parseJson(Config);
  ConfigView View(*J.Root);
  PlanInputs In{View, Config, *M, *F, 0};
  PlanOptions O;
  if (!Image)
    O.SeqLen = X.shape()[1];
  O.CheckpointLayers = S.CheckpointLayers;
  O.ElideCopies = !S.KeepCopies;
  O.FusePointwise = !S.KeepPointwise;
  O.Loss = Loss;
  llvm::Expected<plan::Plan> P = buildPlan(In, O);
  if (!P) {
    ADD_FAILURE() << llvm::toString(P.takeError());
    return R;
  }
  EXPECT_EQ(plan::checkPlan(*P), "");
  R.Kernels = P->Kernels.size();

  // Every 4-byte value the memory plan places on the device lives in the
  // arena at its offset; parameters live where ZeRO's layout keeps them,
  // which this test does not model.
  std::vector<uint64_t> Place(P->Values.size(), reference::NoPlace);
  for (size_t V = 0; V < P->Values.size(); ++V) {
    const plan::Value &Val = P->Values[V];
    if (Val.Buffer == plan::NoIndex || plan::dtypeBytes(Val.Type) != 4)
      continue;
    const plan::Buffer &B = P->Buffers[Val.Buffer];
    EXPECT_EQ(B.Space, plan::MemorySpace::Device) << Val.Name;
    EXPECT_EQ(B.Offsets[0] % 4, 0u) << Val.Name;
    Place[V] = B.Offsets[0] / 4;
  }
  uint64_t ArenaBytes = P->Estimates.Ranks[0].DeviceArenaBytes;
  reference::Executor E(P->Values, P->Constants, Place, ArenaBytes / 4);
  for (size_t V = 0; V < P->Values.size(); ++V) {
    const plan::Value &Val = P->Values[V];
    if (Val.Kind == plan::ValueKind::Param)
      E.storage(uint32_t(V))
          .assign(exportedWeight(*M, Val.Tensor == plan::NoIndex
                                         ? Val.Name
                                         : P->Tensors[Val.Tensor].Name));
  }

  // Saved activations live at the first backward instruction.
  for (uint32_t I = 0; I < P->Program.size(); ++I)
    if (P->Program[I].Kind == plan::InstrKind::Backward) {
      for (const plan::Buffer &B : P->Buffers)
        if (B.What == plan::Category::Activations &&
            B.Space == plan::MemorySpace::Device)
          for (const plan::Interval &L : B.Live)
            if (L.Begin <= I && I < L.End)
              R.ActivationBytesAtBackward += B.Bytes[0];
      break;
    }

  // The runtime writes a micro step's inputs before its first compute and
  // reads each parameter's gradient in the backward that writes it.
  std::map<uint32_t, std::vector<float>> MicroGrads, Grads;
  auto EndMicro = [&] {
    for (auto &[V, G] : MicroGrads) {
      std::vector<float> &Sum = Grads[V];
      Sum.resize(G.size());
      for (size_t K = 0; K < G.size(); ++K)
        Sum[K] += G[K];
    }
    MicroGrads.clear();
  };
  std::vector<bool> Started(S.GradAccum, false);
  std::vector<bool> Forwarded(P->Ops.size() * S.GradAccum, false);
  for (const plan::Instruction &In : P->Program) {
    bool Backward = In.Kind == plan::InstrKind::Backward;
    if (!Backward && In.Kind != plan::InstrKind::Forward)
      continue;
    if (!Started[In.Micro]) {
      if (In.Micro)
        EndMicro();
      Started[In.Micro] = true;
      E.storage(P->Training.Inputs[0]).assign(X.floats());
      E.storage(P->Training.Targets[0]).assign(Fixture["labels"].floats());
    }
    bool Recompute = !Backward && Forwarded[In.Micro * P->Ops.size() + In.Arg];
    if (!Backward)
      Forwarded[In.Micro * P->Ops.size() + In.Arg] = true;
    R.Recomputes += Recompute;
    const plan::Op &Op = P->Ops[In.Arg];
    const plan::Interval &Range = Backward ? Op.Backward : Op.Forward;
    for (uint32_t K = Range.Begin; K < Range.End; ++K) {
      const plan::Kernel &Kr = P->Kernels[K];
      std::string Problem = E.run(Kr, In.Micro);
      if (!Problem.empty()) {
        ADD_FAILURE() << Kr.Name << ": " << Problem;
        return R;
      }
      if (Kr.kind() == plan::KernelKind::CrossEntropy && !Recompute)
        R.Loss += E.storage(P->Training.LossValue)[0] / S.GradAccum;
      if (Backward)
        for (const plan::TensorRef &Out : Kr.Outputs)
          if (P->Values[Out.Value].Kind == plan::ValueKind::ParamGrad)
            MicroGrads[Out.Value] = E.storage(Out.Value).copy();
    }
  }
  EndMicro();
  for (auto &[V, G] : Grads) {
    const plan::Value &Val = P->Values[V];
    EXPECT_NE(Val.Tensor, plan::NoIndex) << Val.Name;
    if (Val.Tensor != plan::NoIndex)
      R.Grads[P->Tensors[Val.Tensor].Name] = std::move(G);
  }
  return R;
}

void expectPyTorch(const StepResult &R,
                   const std::map<std::string, HostTensor> &Fixture) {
  double Want = Fixture.at("loss").at(0);
  EXPECT_NEAR(R.Loss, Want, 1e-4 * std::fabs(Want)) << "loss";
  EXPECT_FALSE(R.Grads.empty());
  for (const auto &[Name, G] : R.Grads) {
    auto It = Fixture.find("grad." + hfName(Name, Fixture));
    ASSERT_NE(It, Fixture.end()) << Name;
    EXPECT_TRUE(close(HostTensor::fromFloats(It->second.shape(), G),
                      It->second, 1e-4))
        << "gradient of " << Name;
  }
}

class PlanProgram : public ::testing::TestWithParam<ExportCase> {
protected:
  StepResult run(const StepSetup &S) {
    Fixture = readSafeTensors(
        fixturePath(std::string(GetParam().Model) + ".fixture.safetensors"));
    return runStep(GetParam().Export, Fixture, GetParam().Loss, S);
  }
  std::map<std::string, HostTensor> Fixture;
};

TEST_P(PlanProgram, MatchesPyTorchInItsArena) {
  StepResult R = run({});
  EXPECT_EQ(R.Recomputes, 0u);
  expectPyTorch(R, Fixture);
}

TEST_P(PlanProgram, CheckpointedLayersAreRecomputed) {
  StepResult Plain = run({});
  StepResult Ckpt = run({1, 1, true});
  expectPyTorch(Ckpt, Fixture);
  // Every layer's forward runs again, and what the backward starts with is
  // only the layers' inputs.
  EXPECT_GT(Ckpt.Recomputes, 0u);
  EXPECT_GT(Ckpt.ActivationBytesAtBackward, 0u);
  EXPECT_LT(Ckpt.ActivationBytesAtBackward * 2,
            Plain.ActivationBytesAtBackward);
}

TEST_P(PlanProgram, ElidedCopiesGiveTheSameStep) {
  // Attention outputs and the gradients of Q, K and V are written where
  // their copies would have put them: fewer kernels, the same step.
  StepResult Elided = run({}), Kept = run({1, 1, false, true});
  expectPyTorch(Kept, Fixture);
  expectPyTorch(Elided, Fixture);
  // The encoders' fp32 attention runs on the math path, whose outputs
  // stay dense; the decoders still lose copies of their own.
  if (GetParam().Loss == LossKind::CausalLM)
    EXPECT_LT(Elided.Kernels, Kept.Kernels);
  else
    EXPECT_LE(Elided.Kernels, Kept.Kernels);
}

TEST_P(PlanProgram, FusedPointwiseChainsGiveTheSameStep) {
  // Llama's sum of its q, k and v projections' input gradients, among
  // others, runs as fewer kernels; the step still matches PyTorch's.
  StepResult Fused = run({}), Kept = run({1, 1, false, false, true});
  expectPyTorch(Kept, Fixture);
  expectPyTorch(Fused, Fixture);
  if (std::string(GetParam().Model) == "llama-train")
    EXPECT_LT(Fused.Kernels, Kept.Kernels);
  else
    EXPECT_LE(Fused.Kernels, Kept.Kernels);
}

TEST_P(PlanProgram, AccumulatedMicroStepsAtStage2) {
  // The same batch twice, each scaled by 1/2: PyTorch's gradient again.
  expectPyTorch(run({2, 2, true}), Fixture);
}

TEST_P(PlanProgram, Stage3) { expectPyTorch(run({3, 1, true}), Fixture); }

INSTANTIATE_TEST_SUITE_P(
    Exports, PlanProgram,
    ::testing::Values(
        ExportCase{"gpt2-train.dynamo", "gpt2-train", LossKind::CausalLM},
        ExportCase{"llama-train.dynamo", "llama-train", LossKind::CausalLM},
        ExportCase{"bert-train.torchscript", "bert-train", LossKind::MaskedLM},
        ExportCase{"vit-train.dynamo", "vit-train",
             LossKind::SequenceClassification}),
    exportCaseName);

} // namespace
