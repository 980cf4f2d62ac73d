//===- OnnxWriter.cpp -----------------------------------------------------===//

#include "dsc/Graph/OnnxWriter.h"
#include "dsc/Version.h"

#include "onnx/onnx_pb.h"


using namespace llvm;

namespace dsc {

OnnxWriter::OnnxWriter(StringRef GraphName, StringRef Producer,
                       int WeightType, StringRef WeightsFile, int Opset)
    : M(std::make_unique<onnx::ModelProto>()), WeightType(WeightType),
      WeightsFile(WeightsFile.str()) {
  M->set_ir_version(8);
  M->set_producer_name(Producer.str());
  M->set_producer_version(Version);
  auto *Op = M->add_opset_import();
  Op->set_domain("");
  Op->set_version(Opset);
  G = M->mutable_graph();
  G->set_name(GraphName.str());
}

OnnxWriter::~OnnxWriter() = default;

std::string OnnxWriter::weight(const std::string &Name,
                               const std::vector<int64_t> &Dims) {
  onnx::TensorProto *T = G->add_initializer();
  T->set_name(Name);
  T->set_data_type(WeightType);
  int64_t Elems = 1;
  for (int64_t D : Dims) {
    T->add_dims(D);
    Elems *= D;
  }
  int64_t Bytes = Elems * (WeightType == Float32 ? 4 : 2);
  T->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto Add = [&](const char *K, const std::string &V) {
    auto *E = T->add_external_data();
    E->set_key(K);
    E->set_value(V);
  };
  Add("location", WeightsFile);
  Add("offset", std::to_string(Offset));
  Add("length", std::to_string(Bytes));
  Offset += Bytes;
  return Name;
}

std::string OnnxWriter::ints(const std::vector<int64_t> &V) {
  std::string Name = "const_" + std::to_string(Counter++);
  onnx::NodeProto *N = G->add_node();
  N->set_op_type("Constant");
  N->set_name(Name);
  N->add_output(Name);
  onnx::AttributeProto *A = N->add_attribute();
  A->set_name("value");
  A->set_type(onnx::AttributeProto_AttributeType_TENSOR);
  onnx::TensorProto *T = A->mutable_t();
  T->set_data_type(onnx::TensorProto_DataType_INT64);
  T->add_dims(int64_t(V.size()));
  for (int64_t X : V)
    T->add_int64_data(X);
  return Name;
}

std::string OnnxWriter::scalar(int64_t V) {
  std::string Name = ints({V});
  G->mutable_node(G->node_size() - 1)
      ->mutable_attribute(0)
      ->mutable_t()
      ->clear_dims();
  return Name;
}

std::string OnnxWriter::floats(const std::vector<float> &V,
                               const std::vector<int64_t> &Dims) {
  std::string Name = ints({});
  onnx::TensorProto *T =
      G->mutable_node(G->node_size() - 1)->mutable_attribute(0)->mutable_t();
  T->Clear();
  T->set_data_type(onnx::TensorProto_DataType_FLOAT);
  for (int64_t D : Dims)
    T->add_dims(D);
  for (float F : V)
    T->add_float_data(F);
  return Name;
}

std::string OnnxWriter::boolean(bool V) {
  std::string Name = ints({});
  onnx::TensorProto *T =
      G->mutable_node(G->node_size() - 1)->mutable_attribute(0)->mutable_t();
  T->Clear();
  T->set_data_type(onnx::TensorProto_DataType_BOOL);
  T->add_int32_data(V);
  return Name;
}

std::string OnnxWriter::node(StringRef Op, const std::string &Scope,
                             const std::vector<std::string> &Inputs,
                             const std::vector<std::string> &Shape, int Type) {
  std::string Out = "/" + Scope + "/" + Op.str() + "_" +
                    std::to_string(Counter++) + "_output_0";
  onnx::NodeProto *N = G->add_node();
  N->set_op_type(Op.str());
  N->set_name("/" + Scope + "/" + Op.str() + "_" + std::to_string(Counter));
  for (const std::string &I : Inputs)
    N->add_input(I);
  N->add_output(Out);
  Last = N;
  if (Type != Undeclared)
    declare(Out, Shape, Type == FloatOutput ? WeightType : Type, false, false);
  return Out;
}

std::string OnnxWriter::extraOutput(const std::vector<std::string> &Shape) {
  std::string Out =
      Last->output(0) + "_" + std::to_string(Last->output_size());
  Last->add_output(Out);
  declare(Out, Shape, WeightType, false, false);
  return Out;
}

void OnnxWriter::intAttr(const char *Name, int64_t V) {
  onnx::AttributeProto *A = Last->add_attribute();
  A->set_name(Name);
  A->set_type(onnx::AttributeProto_AttributeType_INT);
  A->set_i(V);
}

void OnnxWriter::intsAttr(const char *Name, const std::vector<int64_t> &V) {
  onnx::AttributeProto *A = Last->add_attribute();
  A->set_name(Name);
  A->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (int64_t X : V)
    A->add_ints(X);
}

void OnnxWriter::floatAttr(const char *Name, float V) {
  onnx::AttributeProto *A = Last->add_attribute();
  A->set_name(Name);
  A->set_type(onnx::AttributeProto_AttributeType_FLOAT);
  A->set_f(V);
}

void OnnxWriter::stringAttr(const char *Name, StringRef V) {
  onnx::AttributeProto *A = Last->add_attribute();
  A->set_name(Name);
  A->set_type(onnx::AttributeProto_AttributeType_STRING);
  A->set_s(V.str());
}

void OnnxWriter::input(const std::string &Name,
                       const std::vector<std::string> &Shape) {
  declare(Name, Shape, Int64, true, false);
}

void OnnxWriter::output(const std::string &Name,
                        const std::vector<std::string> &Shape) {
  declare(Name, Shape, WeightType, false, true);
}

void OnnxWriter::declare(const std::string &Name,
                         const std::vector<std::string> &Shape, int Type,
                         bool AsInput, bool AsOutput) {
  onnx::ValueInfoProto *V = AsInput    ? G->add_input()
                            : AsOutput ? G->add_output()
                                       : G->add_value_info();
  V->set_name(Name);
  auto *TT = V->mutable_type()->mutable_tensor_type();
  TT->set_elem_type(Type);
  auto *Sh = TT->mutable_shape();
  for (const std::string &D : Shape) {
    auto *Dm = Sh->add_dim();
    int64_t N;
    if (!StringRef(D).getAsInteger(10, N))
      Dm->set_dim_value(N);
    else
      Dm->set_dim_param(D);
  }
}

Expected<std::string> OnnxWriter::serialize() const {
  std::string Bytes;
  if (!M->SerializeToString(&Bytes))
    return createStringError(inconvertibleErrorCode(),
                             "the generated model does not serialize "
                             "(over 2 GiB of graph)");
  return Bytes;
}

} // namespace dsc
