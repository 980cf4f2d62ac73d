//===- GraphTest.cpp - ONNX import, parameters and shapes -----------------===//
//
// Models are built here with libonnx's messages, so every malformed case is
// exact and needs no file.
//
//===----------------------------------------------------------------------===//

#include "dsc/Compute/Import.h"
#include "dsc/Graph/ModelGen.h"
#include "dsc/Graph/Parameters.h"
#include "dsc/Graph/Dims.h"
#include "dsc/Plan/Planner.h"
#include "dsc/Config/Json.h"

#include "onnx/onnx_pb.h"

#include "gtest/gtest.h"

using namespace dsc;

namespace {

class ModelBuilder {
public:
  ModelBuilder() {
    P.set_ir_version(8);
    auto *Op = P.add_opset_import();
    Op->set_version(17);
  }
  onnx::GraphProto &graph() { return *P.mutable_graph(); }
  onnx::TensorProto &init(const std::string &Name, std::vector<int64_t> Dims,
                          int Type = onnx::TensorProto_DataType_FLOAT) {
    onnx::TensorProto *T = graph().add_initializer();
    T->set_name(Name);
    T->set_data_type(Type);
    for (int64_t D : Dims)
      T->add_dims(D);
    return *T;
  }
  onnx::NodeProto &node(const std::string &Op, std::vector<std::string> In,
                        std::vector<std::string> Out,
                        const std::string &Name = "") {
    onnx::NodeProto *N = graph().add_node();
    N->set_op_type(Op);
    N->set_name(Name);
    for (auto &I : In)
      N->add_input(I);
    for (auto &O : Out)
      N->add_output(O);
    return *N;
  }
  void input(const std::string &Name, std::vector<std::string> Dims,
             int Type = onnx::TensorProto_DataType_FLOAT) {
    auto *V = graph().add_input();
    V->set_name(Name);
    auto *TT = V->mutable_type()->mutable_tensor_type();
    TT->set_elem_type(Type);
    for (auto &D : Dims) {
      int64_t N;
      if (!llvm::StringRef(D).getAsInteger(10, N))
        TT->mutable_shape()->add_dim()->set_dim_value(N);
      else
        TT->mutable_shape()->add_dim()->set_dim_param(D);
    }
  }
  void output(const std::string &Name) { graph().add_output()->set_name(Name); }

  llvm::Expected<Model> import() {
    Bytes = P.SerializeAsString();
    return importOnnxBuffer(Bytes, "test.onnx");
  }
  std::string errorOf() {
    llvm::Expected<Model> M = import();
    if (M)
      return "";
    return llvm::toString(M.takeError());
  }

  onnx::ModelProto P;
  std::string Bytes;
};

TEST(OnnxImportTest, ReadsGraphWithoutWeightPayloads) {
  ModelBuilder B;
  B.input("x", {"batch", "16"});
  onnx::TensorProto &W = B.init("layer.weight", {16, 32});
  W.set_raw_data(std::string(16 * 32 * 4, '\x7f'));
  B.node("MatMul", {"x", "layer.weight"}, {"y"});
  B.output("y");
  llvm::Expected<Model> M = B.import();
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  ASSERT_EQ(M->Initializers.size(), 1u);
  EXPECT_EQ(M->Initializers[0].numel(), 512u);
  // The payload was skipped, not kept.
  EXPECT_TRUE(M->Proto->graph().initializer(0).raw_data().empty());
  EXPECT_EQ(M->Inputs.size(), 1u);
  EXPECT_EQ(M->Inputs[0].Type.Shape[0].Symbol, "batch");
}

TEST(OnnxImportTest, RefusesWhatIsNotAModel) {
  EXPECT_NE(llvm::toString(importOnnxBuffer("", "e.onnx").takeError())
                .find("empty"),
            std::string::npos);
  std::string Garbage = "\xff\xff\xff\xff not a protobuf";
  EXPECT_NE(llvm::toString(importOnnxBuffer(Garbage, "g.onnx").takeError())
                .find("not an ONNX model"),
            std::string::npos);
  ModelBuilder B;
  B.input("x", {"4"});
  B.init("w", {4, 4}).set_raw_data(std::string(64, 'a'));
  B.node("MatMul", {"x", "w"}, {"y"});
  B.output("y");
  std::string Bytes = B.P.SerializeAsString();
  std::string Truncated = Bytes.substr(0, Bytes.size() / 2);
  EXPECT_NE(llvm::toString(importOnnxBuffer(Truncated, "t.onnx").takeError())
                .find("truncated"),
            std::string::npos);
}

TEST(OnnxImportTest, RefusesSingleFilesOverTwoGiB) {
  static const char Small[1] = {0};
  // Only the size is looked at before refusing.
  llvm::StringRef Huge(Small, size_t(MaxSingleFileModelBytes) + 1);
  std::string E = llvm::toString(importOnnxBuffer(Huge, "big.onnx").takeError());
  EXPECT_NE(E.find("external data"), std::string::npos) << E;
}

TEST(OnnxImportTest, FindsCyclesAndDanglingInputs) {
  ModelBuilder Cycle;
  Cycle.input("x", {"4"});
  Cycle.node("Add", {"x", "b"}, {"a"}, "first");
  Cycle.node("Relu", {"a"}, {"b"}, "second");
  Cycle.output("b");
  EXPECT_NE(Cycle.errorOf().find("cycle"), std::string::npos);

  ModelBuilder Dangling;
  Dangling.input("x", {"4"});
  Dangling.node("Add", {"x", "nowhere"}, {"y"}, "add");
  Dangling.output("y");
  std::string E = Dangling.errorOf();
  EXPECT_NE(E.find("'nowhere'"), std::string::npos) << E;
  EXPECT_NE(E.find("Add 'add'"), std::string::npos) << E;

  ModelBuilder Twice;
  Twice.input("x", {"4"});
  Twice.node("Relu", {"x"}, {"y"});
  Twice.node("Relu", {"x"}, {"y"});
  Twice.output("y");
  EXPECT_NE(Twice.errorOf().find("already defines"), std::string::npos);
}

TEST(OnnxImportTest, SortsAnUnsortedAcyclicGraph) {
  ModelBuilder B;
  B.input("x", {"4"});
  B.node("Relu", {"a"}, {"b"}, "late");
  B.node("Relu", {"x"}, {"a"}, "early");
  B.output("b");
  llvm::Expected<Model> M = B.import();
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  EXPECT_EQ(M->Nodes[0].Name, "early");
}

TEST(OnnxImportTest, RefusesBadDimsAndExternalLocations) {
  ModelBuilder Negative;
  Negative.init("w", {4, -3});
  EXPECT_NE(Negative.errorOf().find("dimension -3"), std::string::npos);

  ModelBuilder Overflow;
  Overflow.init("w", {int64_t(1) << 40, int64_t(1) << 40});
  EXPECT_NE(Overflow.errorOf().find("64 bits"), std::string::npos);

  auto External = [](const std::string &Location) {
    ModelBuilder B;
    onnx::TensorProto &T = B.init("w", {4});
    T.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
    auto *E = T.add_external_data();
    E->set_key("location");
    E->set_value(Location);
    return B.errorOf();
  };
  EXPECT_NE(External("/etc/passwd").find("absolute"), std::string::npos);
  EXPECT_NE(External("../../secret.bin").find("outside"), std::string::npos);
  EXPECT_EQ(External("weights/../model.data"), "");
  EXPECT_NE(External("").find("names no file"), std::string::npos);
}

TEST(ParametersTest, TellsParametersFromBuffersAndConstants) {
  ModelBuilder B;
  B.input("ids", {"batch", "seq"}, onnx::TensorProto_DataType_INT64);
  B.init("embed.weight", {100, 8});
  B.init("bn.weight", {8});
  B.init("bn.bias", {8});
  B.init("bn.running_mean", {8});
  B.init("bn.running_var", {8});
  B.init("rotary.inv_freq", {4});
  B.init("shape", {3}, onnx::TensorProto_DataType_INT64);
  B.init("onnx::Mul_7", {});
  B.node("Gather", {"embed.weight", "ids"}, {"h"}, "/embed/Gather");
  B.node("BatchNormalization",
         {"h", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"},
         {"n"}, "/bn/BatchNormalization");
  B.node("Mul", {"n", "onnx::Mul_7"}, {"m"});
  B.node("Mul", {"m", "rotary.inv_freq"}, {"r"});
  B.node("Reshape", {"r", "shape"}, {"s"});
  B.node("Transpose", {"embed.weight"}, {"wt"});
  B.node("MatMul", {"s", "wt"}, {"logits"}, "/lm_head/MatMul");
  B.output("logits");
  llvm::Expected<Model> M = B.import();
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  llvm::Expected<ModelFacts> F = analyzeModel(*M, {});
  ASSERT_TRUE(bool(F));
  auto Role = [&](const std::string &Name) {
    for (const TensorFacts &T : F->Tensors)
      if (M->Initializers[T.Initializer].Name == Name)
        return T.Role;
    return TensorRole::Constant;
  };
  EXPECT_EQ(Role("embed.weight"), TensorRole::Parameter);
  EXPECT_EQ(Role("bn.weight"), TensorRole::Parameter);
  EXPECT_EQ(Role("bn.running_mean"), TensorRole::Buffer);
  EXPECT_EQ(Role("bn.running_var"), TensorRole::Buffer);
  EXPECT_EQ(Role("rotary.inv_freq"), TensorRole::Buffer);
  EXPECT_EQ(Role("shape"), TensorRole::Constant);
  EXPECT_EQ(Role("onnx::Mul_7"), TensorRole::Constant);
  // The tied embedding (Gather and, through a Transpose, MatMul) counts
  // once.
  EXPECT_EQ(F->TotalParams, 800u + 16u);
  EXPECT_TRUE(F->Tensors[0].Tied);
  ASSERT_TRUE(F->HiddenSize);
  EXPECT_EQ(*F->HiddenSize, 8);
  EXPECT_EQ(F->Modules.front().Name, "embed");
  EXPECT_TRUE(F->InferenceSigns.empty());

  AnalysisOptions Frozen;
  Frozen.FreezeRegex = "^bn\\.";
  llvm::Expected<ModelFacts> G = analyzeModel(*M, Frozen);
  ASSERT_TRUE(bool(G));
  EXPECT_EQ(G->FrozenParams, 16u);
  EXPECT_EQ(G->TrainableParams, 800u);
  AnalysisOptions Bad;
  Bad.FreezeRegex = "(";
  EXPECT_FALSE(bool(analyzeModel(*M, Bad)));
  llvm::consumeError(analyzeModel(*M, Bad).takeError());
}

TEST(ShapesTest, EvaluatesDimExpressions) {
  DimBindings B{{"batch", 4}, {"sequence", 128}};
  EXPECT_EQ(evaluateDim("sequence + 1", B), 129);
  EXPECT_EQ(evaluateDim("sequence*batch", B), 512);
  EXPECT_EQ(evaluateDim("(batch*sequence*64)//(sequence*4)", B), 64);
  EXPECT_EQ(evaluateDim("2*(sequence - 28)", B), 200);
  EXPECT_FALSE(evaluateDim("tokens", B));
  EXPECT_FALSE(evaluateDim("floor(sequence)", B));
}

TEST(ShapesTest, ImportFoldsShapeArithmeticIntoReshape) {
  // y = Reshape(x, Concat(Shape(x)[0:2], [4, -1])): the pattern exporters
  // write for splitting heads, at opset 20.
  ModelBuilder B;
  B.P.mutable_opset_import(0)->set_version(20);
  B.input("x", {"batch", "sequence", "64"});
  B.node("Shape", {"x"}, {"s"});
  auto &C = B.node("Constant", {}, {"idx"});
  auto *A = C.add_attribute();
  A->set_name("value");
  A->set_type(onnx::AttributeProto_AttributeType_TENSOR);
  A->mutable_t()->set_data_type(onnx::TensorProto_DataType_INT64);
  A->mutable_t()->add_dims(2);
  A->mutable_t()->add_int64_data(0);
  A->mutable_t()->add_int64_data(1);
  B.node("Gather", {"s", "idx"}, {"bs"});
  auto &D = B.node("Constant", {}, {"tail"});
  auto *A2 = D.add_attribute();
  A2->set_name("value");
  A2->set_type(onnx::AttributeProto_AttributeType_TENSOR);
  A2->mutable_t()->set_data_type(onnx::TensorProto_DataType_INT64);
  A2->mutable_t()->add_dims(2);
  A2->mutable_t()->add_int64_data(4);
  A2->mutable_t()->add_int64_data(-1);
  auto &Cat = B.node("Concat", {"bs", "tail"}, {"target"});
  auto *Axis = Cat.add_attribute();
  Axis->set_name("axis");
  Axis->set_type(onnx::AttributeProto_AttributeType_INT);
  Axis->set_i(0);
  B.node("Reshape", {"x", "target"}, {"y"});
  B.node("Relu", {"y"}, {"z"});
  B.output("z");
  llvm::Expected<Model> M = B.import();
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  llvm::Expected<ModelFacts> F = analyzeModel(*M, {});
  ASSERT_TRUE(bool(F));
  compute::ImportOptions Options;
  Options.MicroBatch = 2;
  Options.Dims = {{"sequence", 10}}; // A float input: no --seq-len for it.
  llvm::Expected<compute::Graph> G = compute::importGraph(*M, *F, Options);
  ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
  ASSERT_EQ(G->Outputs.size(), 1u);
  EXPECT_EQ(G->Values[G->Outputs[0]].Dims, (compute::Shape{2, 10, 4, 16}));
  // The shape arithmetic folded away: Relu and Reshape are what is left.
  for (const compute::Node &N : G->Nodes)
    EXPECT_TRUE(N.Op == "Relu" || N.Op == "Reshape") << N.Op;
}

// A constant initializer is read to fold what it feeds; one of gigabytes is
// refused by name before a byte is read (a hostile file once made dsc read
// a sparse 1 GiB constant whole).
TEST(ShapesTest, HugeConstantsAreRefusedUnread) {
  ModelBuilder B;
  B.input("x", {"8", "40000000"}, onnx::TensorProto_DataType_INT64);
  onnx::TensorProto &C =
      B.init("huge", {8, 40000000}, onnx::TensorProto_DataType_INT64);
  C.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto *Loc = C.add_external_data();
  Loc->set_key("location");
  Loc->set_value("huge.bin");
  B.node("Add", {"x", "huge"}, {"y"});
  B.output("y");
  llvm::Expected<Model> M = B.import();
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  llvm::Expected<ModelFacts> F = analyzeModel(*M, {});
  ASSERT_TRUE(bool(F)) << llvm::toString(F.takeError());
  llvm::Expected<compute::Graph> G = compute::importGraph(*M, *F, {});
  ASSERT_FALSE(bool(G));
  EXPECT_EQ(llvm::toString(G.takeError()),
            "constant 'huge' holds 2441 MiB; dsc reads constants (masks, "
            "tables) up to 256 MiB: a larger one is a weight the export did "
            "not mark as a parameter");
}

TEST(ModelGenTest, GeneratedGraphsCountLikePyTorch) {
  for (const char *Preset : {"gpt2-small", "llama-1b"}) {
    llvm::Expected<TransformerSpec> S = transformerPreset(Preset);
    ASSERT_TRUE(bool(S));
    llvm::Expected<std::string> Bytes = generateTransformer(*S);
    ASSERT_TRUE(bool(Bytes));
    llvm::Expected<Model> M = importOnnxBuffer(*Bytes, Preset);
    ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
    llvm::Expected<ModelFacts> F = analyzeModel(*M, {});
    ASSERT_TRUE(bool(F));
    EXPECT_EQ(F->TotalParams, expectedParameters(*S)) << Preset;
    EXPECT_EQ(*F->HiddenSize, S->Hidden) << Preset;
    EXPECT_EQ(F->Layers, S->Layers) << Preset;
    compute::ImportOptions Options;
    Options.SeqLen = 16;
    llvm::Expected<compute::Graph> G = compute::importGraph(*M, *F, Options);
    EXPECT_TRUE(bool(G)) << Preset << ": " << llvm::toString(G.takeError());
  }
  // The published sizes: GPT-2 small and Llama 3.2 1B.
  EXPECT_EQ(expectedParameters(*transformerPreset("gpt2-small")), 124439808u);
  EXPECT_EQ(expectedParameters(*transformerPreset("llama-1b")), 1235814400u);
}

TEST(PlanLayersTest, CheckpointingAModelWithoutLayersIsAnError) {
  // A bigram model: an embedding and a head, no repeated block.
  ModelBuilder B;
  B.input("input_ids", {"batch", "sequence"}, onnx::TensorProto_DataType_INT64);
  B.init("wte.weight", {50, 16});
  B.init("head.weight", {16, 50});
  B.node("Gather", {"wte.weight", "input_ids"}, {"h"}, "/wte/Gather");
  B.node("MatMul", {"h", "head.weight"}, {"logits"}, "/head/MatMul");
  B.output("logits");
  llvm::Expected<Model> M = B.import();
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  llvm::Expected<ModelFacts> F = analyzeModel(*M, {});
  ASSERT_TRUE(bool(F));
  std::string Config = "{\"train_micro_batch_size_per_gpu\": 2}";
  JsonParseResult J = parseJson(Config);
  ConfigView View(*J.Root);
  PlanInputs In{View, Config, *M, *F, 0};
  PlanOptions O;
  O.SeqLen = 8;
  llvm::Expected<plan::Plan> Plain = buildPlan(In, O);
  ASSERT_TRUE(bool(Plain)) << llvm::toString(Plain.takeError());
  O.CheckpointLayers = true;
  llvm::Expected<plan::Plan> P = buildPlan(In, O);
  ASSERT_FALSE(bool(P));
  EXPECT_NE(llvm::toString(P.takeError()).find("no repeated layers"),
            std::string::npos);
}

} // namespace
