//===- PlanYAML.cpp - YAML I/O for the plan -------------------------------===//
//
// One mapping per plan struct, generated from its visit() field list.
//
//===----------------------------------------------------------------------===//

#include "dsc/Plan/PlanYAML.h"

#include "dsc/Plan/MeasuredRatesYAML.h"

#include "dsc/PlanCheck.h"
#include "dsc/PlanCodec.h"

#include "dsc/Support/YAMLInput.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/YAMLTraits.h"

using namespace llvm;
namespace plan = dsc::plan;

#define DSC_PLAN_YAML_MAPPING(T)                                               \
  template <> struct MappingTraits<plan::T> {                                  \
    static void mapping(IO &IO, plan::T &V) {                                  \
      V.visit([&](const char *Name, auto &Field) {                             \
        IO.mapRequired(Name, Field);                                           \
      });                                                                      \
    }                                                                          \
  };
// Small records print on one line: { first: 0, count: 8 }.
#define DSC_PLAN_YAML_FLOW_MAPPING(T)                                          \
  template <> struct MappingTraits<plan::T> {                                  \
    static void mapping(IO &IO, plan::T &V) {                                  \
      V.visit([&](const char *Name, auto &Field) {                             \
        IO.mapRequired(Name, Field);                                           \
      });                                                                      \
    }                                                                          \
    static const bool flow = true;                                             \
  };
#define DSC_PLAN_YAML_ENUM(E)                                                  \
  template <> struct ScalarEnumerationTraits<plan::E> {                        \
    static void enumeration(IO &IO, plan::E &V) {                              \
      for (unsigned I = 0; I < plan::EnumInfo<plan::E>::Count; ++I)            \
        IO.enumCase(V, plan::EnumInfo<plan::E>::Names[I], plan::E(I));         \
    }                                                                          \
  };

LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(plan::DimBinding)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::Tensor)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::Module)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::Op)
LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(plan::RankRange)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::RankClass)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::SubGroup)
LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(plan::Segment)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::Bucket)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::FetchUnit)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::Transfer)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::Instruction)
LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(plan::Interval)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::Buffer)
LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(plan::CategoryBytes)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::FixedCost)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::RankEstimate)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::Value)
LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(plan::TensorRef)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::Kernel)
LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(plan::PointwiseInstr)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::Constant)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::View)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::TensorViews)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::UnitViews)
LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(plan::BucketPiece)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::BucketViews)
LLVM_YAML_IS_SEQUENCE_VECTOR(plan::SubGroupViews)

namespace llvm::yaml {
// DType's and CommCtaPolicy's enumerations: MeasuredRatesYAML.h, which the
// calibration shares.
DSC_PLAN_YAML_ENUM(OffloadDevice)
DSC_PLAN_YAML_ENUM(TensorRole)
DSC_PLAN_YAML_ENUM(Collective)
DSC_PLAN_YAML_ENUM(Stream)
DSC_PLAN_YAML_ENUM(InstrKind)
DSC_PLAN_YAML_ENUM(MemorySpace)
DSC_PLAN_YAML_ENUM(Category)
DSC_PLAN_YAML_ENUM(BufferRole)
DSC_PLAN_YAML_ENUM(TransferKind)
DSC_PLAN_YAML_ENUM(TransferPoint)
DSC_PLAN_YAML_ENUM(ValueKind)
DSC_PLAN_YAML_ENUM(KernelKind)
DSC_PLAN_YAML_ENUM(PointwiseOp)
DSC_PLAN_YAML_ENUM(LossKind)
DSC_PLAN_YAML_ENUM(AttentionAlgorithm)
DSC_PLAN_YAML_FLOW_MAPPING(DimBinding)
DSC_PLAN_YAML_MAPPING(Hardware)
DSC_PLAN_YAML_MAPPING(Info)
DSC_PLAN_YAML_MAPPING(Tensor)
DSC_PLAN_YAML_MAPPING(Module)
DSC_PLAN_YAML_MAPPING(Op)
DSC_PLAN_YAML_FLOW_MAPPING(RankRange)
DSC_PLAN_YAML_MAPPING(RankClass)
DSC_PLAN_YAML_MAPPING(SubGroup)
DSC_PLAN_YAML_MAPPING(Partition)
DSC_PLAN_YAML_FLOW_MAPPING(Segment)
DSC_PLAN_YAML_MAPPING(Bucket)
DSC_PLAN_YAML_MAPPING(FetchUnit)
DSC_PLAN_YAML_MAPPING(Transfer)
DSC_PLAN_YAML_MAPPING(Instruction)
DSC_PLAN_YAML_FLOW_MAPPING(Interval)
DSC_PLAN_YAML_MAPPING(Buffer)
DSC_PLAN_YAML_FLOW_MAPPING(CategoryBytes)
DSC_PLAN_YAML_MAPPING(FixedCost)
DSC_PLAN_YAML_MAPPING(RankEstimate)
DSC_PLAN_YAML_MAPPING(DeepSpeedEstimate)
DSC_PLAN_YAML_MAPPING(Estimate)
DSC_PLAN_YAML_FLOW_MAPPING(Value)
DSC_PLAN_YAML_FLOW_MAPPING(TensorRef)
DSC_PLAN_YAML_FLOW_MAPPING(PointwiseInstr)
DSC_PLAN_YAML_MAPPING(PointwiseAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(ReduceAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(FillAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(RotaryAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(RotaryGradAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(SwiGLUAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(SwiGLUGradAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(SoftmaxAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(SoftmaxGradAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(LayerNormAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(RMSNormAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(LayerNormGradAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(RMSNormGradAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(AttentionAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(AttentionGradAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(GatherAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(GatherGradAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(CrossEntropyAttrs)
DSC_PLAN_YAML_FLOW_MAPPING(CrossEntropyGradAttrs)

// A kernel names its kind, then its fields with the kind's attributes
// under `attrs`; reading, the kind picks which attributes to read.
template <> struct MappingTraits<plan::Kernel> {
  static void mapping(IO &IO, plan::Kernel &K) {
    plan::KernelKind Kind = K.kind();
    IO.mapRequired("kind", Kind);
    if (!IO.outputting() && Kind != K.kind())
      K.Attrs = plan::defaultAttrs(Kind);
    K.visit([&](const char *Name, auto &Field) {
      if constexpr (std::is_same_v<std::decay_t<decltype(Field)>,
                                   plan::KernelAttrs>)
        std::visit([&](auto &A) { IO.mapRequired(Name, A); }, Field);
      else
        IO.mapRequired(Name, Field);
    });
  }
};
DSC_PLAN_YAML_MAPPING(Constant)
DSC_PLAN_YAML_MAPPING(Compute)
DSC_PLAN_YAML_FLOW_MAPPING(View)
DSC_PLAN_YAML_FLOW_MAPPING(TensorViews)
DSC_PLAN_YAML_FLOW_MAPPING(UnitViews)
DSC_PLAN_YAML_FLOW_MAPPING(BucketPiece)
DSC_PLAN_YAML_MAPPING(BucketViews)
DSC_PLAN_YAML_FLOW_MAPPING(SubGroupViews)
DSC_PLAN_YAML_MAPPING(PartitionViews)
DSC_PLAN_YAML_MAPPING(RuntimeViews)
DSC_PLAN_YAML_MAPPING(Placement)

template <> struct MappingTraits<plan::Plan> {
  static void mapping(IO &IO, plan::Plan &P) {
    IO.mapRequired("format_version", Version);
    plan::visitSections(P, [&](plan::SectionId, const char *Name,
                               auto &Member) { IO.mapRequired(Name, Member); });
  }
  static inline uint32_t Version = plan::FormatVersion;
};
} // namespace llvm::yaml

#undef DSC_PLAN_YAML_MAPPING
#undef DSC_PLAN_YAML_FLOW_MAPPING
#undef DSC_PLAN_YAML_ENUM

namespace dsc {

void writePlanYAML(raw_ostream &OS, const plan::Plan &P) {
  yaml::Output Out(OS, nullptr, /*WrapColumn=*/0);
  yaml::MappingTraits<plan::Plan>::Version = plan::FormatVersion;
  Out << const_cast<plan::Plan &>(P);
}

Expected<plan::Plan> readPlanYAML(StringRef Text, StringRef Path) {
  plan::Plan P;
  if (Error E = readYAMLInto(P, Text, Path, "a YAML plan"))
    return E;
  if (yaml::MappingTraits<plan::Plan>::Version != plan::FormatVersion)
    return createStringError(inconvertibleErrorCode(),
                             "%s: plan format version %u; this dsc reads %u",
                             Path.str().c_str(),
                             yaml::MappingTraits<plan::Plan>::Version,
                             plan::FormatVersion);
  return P;
}

Expected<plan::Plan> readPlanFile(StringRef Path, plan::PlanStage Stage) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> B =
      MemoryBuffer::getFile(Path, /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  if (!B)
    return createStringError(B.getError(), "%s: %s", Path.str().c_str(),
                             B.getError().message().c_str());
  StringRef Bytes = (*B)->getBuffer();
  std::optional<plan::Plan> P;
  if (Bytes.startswith(StringRef(plan::FileMagic, 7))) {
    std::string Error;
    P = plan::readPlan(reinterpret_cast<const uint8_t *>(Bytes.data()),
                       Bytes.size(), Error);
    if (!P)
      return createStringError(inconvertibleErrorCode(), "%s: %s",
                               Path.str().c_str(), Error.c_str());
  } else if (Bytes.contains('\0') || !Bytes.contains("format_version:")) {
    return createStringError(inconvertibleErrorCode(),
                             "%s: not a dsc plan: neither plan.bin (no "
                             "DSCPLAN header) nor a YAML plan (no "
                             "format_version); make one with dsc plan",
                             Path.str().c_str());
  } else {
    Expected<plan::Plan> Y = readPlanYAML(Bytes, Path);
    if (!Y)
      return Y.takeError();
    P = std::move(*Y);
  }
  std::string Problem = plan::checkPlan(*P, Stage);
  if (!Problem.empty())
    return createStringError(inconvertibleErrorCode(),
                             "%s: inconsistent plan: %s", Path.str().c_str(),
                             Problem.c_str());
  return std::move(*P);
}

Error writePlanFile(StringRef Path, const plan::Plan &P) {
  std::vector<uint8_t> Bytes = plan::writePlan(P);
  std::error_code EC;
  raw_fd_ostream OS(Path, EC, sys::fs::OF_None);
  if (EC)
    return createStringError(EC, "%s: %s", Path.str().c_str(),
                             EC.message().c_str());
  OS.write(reinterpret_cast<const char *>(Bytes.data()), Bytes.size());
  OS.close();
  if (OS.has_error())
    return createStringError(OS.error(), "%s: %s", Path.str().c_str(),
                             OS.error().message().c_str());
  return Error::success();
}

} // namespace dsc
