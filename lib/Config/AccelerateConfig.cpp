//===- AccelerateConfig.cpp -----------------------------------------------===//
//
// What accelerate does with the file (commands/config/config_args.py,
// commands/launch.py, utils/dataclasses.py DeepSpeedPlugin): unknown
// top-level keys are refused at load; keys inside deepspeed_config become
// environment variables, and unknown ones are silently dropped;
// deepspeed_config_file together with any of nine settings is refused in
// every training process.
//
//===----------------------------------------------------------------------===//

#include "dsc/Config/AccelerateConfig.h"
#include "dsc/Support/YAMLInput.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/YAMLParser.h"

using namespace llvm;

namespace dsc {

bool isYamlPath(StringRef Path) {
  return Path.endswith_insensitive(".yaml") || Path.endswith_insensitive(".yml");
}

namespace {

// ClusterConfig's and BaseConfig's fields, plus the two legacy keys that
// process_config converts before the unknown-key check.
const StringRef TopLevelKeys[] = {
    "compute_environment", "distributed_type", "mixed_precision", "use_cpu",
    "debug", "num_processes", "machine_rank", "num_machines", "gpu_ids",
    "main_process_ip", "main_process_port", "rdzv_backend", "same_network",
    "main_training_function", "enable_cpu_affinity", "fp8_config",
    "deepspeed_config", "fsdp_config", "parallelism_config",
    "megatron_lm_config", "mpirun_config", "dynamo_config", "downcast_bf16",
    "tpu_name", "tpu_zone", "command_file", "tpu_use_cluster", "tpu_use_sudo",
    "commands", "tpu_vm", "tpu_env", "fp16", "dynamo_backend",
    // SageMakerConfig.
    "ec2_instance_type", "iam_role_name", "image_uri", "profile", "region",
    "base_job_name", "pytorch_version", "transformers_version", "py_version",
    "sagemaker_inputs_file", "sagemaker_metrics_file", "additional_args"};

struct DeepSpeedKey {
  StringRef Name;
  StringRef Kind; // "stage", "device", "bool", "int-or-auto", ...
  StringRef Doc;
};

const DeepSpeedKey DeepSpeedKeys[] = {
    {"deepspeed_config_file", "path", "a ds_config JSON to use"},
    {"zero_stage", "stage", "ZeRO stage (fills zero_optimization.stage)"},
    {"offload_optimizer_device", "device", "optimizer offload device"},
    {"offload_param_device", "device", "parameter offload device"},
    {"offload_optimizer_nvme_path", "string", "NVMe folder for optimizer"},
    {"offload_param_nvme_path", "string", "NVMe folder for parameters"},
    {"gradient_accumulation_steps", "int-or-auto", "accumulation steps"},
    {"gradient_clipping", "float-or-auto", "clip norm"},
    {"zero3_init_flag", "bool", "partition the model as it is created"},
    {"zero3_save_16bit_model", "bool", "gather 16-bit weights on save"},
    {"deepspeed_moe_layer_cls_names", "string", "MoE layer classes"},
    {"deepspeed_multinode_launcher", "launcher", "multi-node launcher"},
    {"deepspeed_hostfile", "string", "hostfile"},
    {"deepspeed_exclusion_filter", "string", "hosts to exclude"},
    {"deepspeed_inclusion_filter", "string", "hosts to include"},
};

// Settings accelerate refuses next to deepspeed_config_file
// (DeepSpeedPlugin._deepspeed_config_checks).
const StringRef IgnoredWithConfigFile[] = {
    "gradient_accumulation_steps", "gradient_clipping", "zero_stage",
    "offload_optimizer_device", "offload_param_device",
    "offload_param_nvme_path", "offload_optimizer_nvme_path",
    "zero3_save_16bit_model"};

/// One `key: value` of the file, read while the YAML stream is alive (its
/// nodes are gone once the parser moves on).
struct Entry {
  std::string Key;
  SMRange KeyRange;
  SMRange ValueRange;
  /// The scalar's text; nullopt for a mapping, a list or null.
  std::optional<std::string> Value;
  bool Quoted = false;
  bool IsMapping = false;
  bool IsNull = false;
  /// For deepspeed_config: its entries.
  std::vector<Entry> Children;
};

Entry readEntry(yaml::KeyValueNode &KV, bool Descend) {
  Entry E;
  if (auto *K = dyn_cast_or_null<yaml::ScalarNode>(KV.getKey())) {
    SmallString<32> Storage;
    E.Key = K->getValue(Storage).str();
    E.KeyRange = K->getSourceRange();
  }
  yaml::Node *V = KV.getValue();
  if (!V)
    return E;
  E.ValueRange = V->getSourceRange();
  if (auto *S = dyn_cast<yaml::ScalarNode>(V)) {
    SmallString<32> Storage;
    E.Value = S->getValue(Storage).str();
    StringRef Raw = S->getRawValue();
    E.Quoted = Raw.startswith("'") || Raw.startswith("\"");
  } else if (auto *M = dyn_cast<yaml::MappingNode>(V)) {
    E.IsMapping = true;
    for (yaml::KeyValueNode &Child : *M)
      if (Descend)
        E.Children.push_back(readEntry(Child, false));
      else
        Child.skip();
  } else if (isa<yaml::NullNode>(V)) {
    E.IsNull = true;
  } else {
    V->skip();
  }
  return E;
}

class AccelerateLinter {
public:
  AccelerateLinter(DiagnosticEngine &Engine, unsigned BufferID,
                   const LintOptions &Options)
      : Engine(Engine), BufferID(BufferID), Options(Options) {}

  void run();

private:
  DiagnosticEngine &Engine;
  unsigned BufferID;
  const LintOptions &Options;

  Diagnostic &report(Rule R, SMRange Where, const Twine &Message) {
    return report(R, ruleSeverity(R), Where, Message);
  }
  Diagnostic &report(Rule R, Severity Sev, SMRange Where,
                     const Twine &Message) {
    return Engine.report(Sev, ruleCode(R), BufferID, Where, Message);
  }

  bool read(std::vector<Entry> &Top, SMRange &RootRange);
  void checkDeepSpeedSection(const Entry &Section,
                             std::optional<std::string> MixedPrecision,
                             SMRange MixedPrecisionKey,
                             std::optional<int64_t> WorldSize);
  void lintReferencedConfig(StringRef File, SMRange Where,
                            std::optional<std::string> MixedPrecision,
                            std::optional<int64_t> WorldSize);
};

/// YAML 1.1 booleans that yaml.safe_load turns into True/False.
bool isYamlBoolWord(StringRef S) {
  for (StringRef W : {"yes", "no", "on", "off", "true", "false", "y", "n"})
    if (S.equals_insensitive(W))
      return true;
  return false;
}

/// Parses the file into entries; false (after reporting) when it is not a
/// readable YAML mapping.
bool AccelerateLinter::read(std::vector<Entry> &Top, SMRange &RootRange) {
  SourceMgr &SM = Engine.sourceMgr();
  MemoryBufferRef Ref = SM.getMemoryBuffer(BufferID)->getMemBufferRef();
  // LLVM's YAML scanner recurses per nesting level: refuse what would
  // overflow the stack before it reads anything.
  if (unsigned Line = tooDeeplyNested(Ref.getBuffer())) {
    SMLoc At = SM.FindLocForLineAndColumn(BufferID, Line, 1);
    report(Rule::YamlSyntax, SMRange(At, At),
           "nested too deeply to be an accelerate config");
    return false;
  }
  // Route YAML parse errors into our diagnostics instead of stderr.
  struct Captured {
    SMLoc Loc;
    std::string Message;
  };
  std::vector<Captured> Errors;
  auto OldHandler = SM.getDiagHandler();
  void *OldContext = SM.getDiagContext();
  SM.setDiagHandler(
      [](const SMDiagnostic &D, void *Context) {
        static_cast<std::vector<Captured> *>(Context)->push_back(
            {D.getLoc(), D.getMessage().str()});
      },
      &Errors);
  bool IsMapping = false;
  {
    yaml::Stream Stream(Ref, SM);
    yaml::document_iterator Doc = Stream.begin();
    if (Doc != Stream.end()) {
      yaml::Node *Root = Doc->getRoot();
      if (Root)
        RootRange = Root->getSourceRange();
      if (auto *Map = dyn_cast_or_null<yaml::MappingNode>(Root)) {
        IsMapping = true;
        for (yaml::KeyValueNode &KV : *Map)
          Top.push_back(readEntry(KV, /*Descend=*/true));
      } else if (Root) {
        Root->skip();
      }
    }
  }
  SM.setDiagHandler(OldHandler, OldContext);
  for (const Captured &E : Errors)
    report(Rule::YamlSyntax, SMRange(E.Loc, E.Loc), E.Message);
  if (!Errors.empty())
    return false;
  if (!IsMapping) {
    report(Rule::NotAnObject, RootRange,
           "an accelerate config is a YAML mapping of settings");
    return false;
  }
  return true;
}

void AccelerateLinter::run() {
  std::vector<Entry> Top;
  SMRange RootRange;
  if (!read(Top, RootRange))
    return;

  std::optional<std::string> MixedPrecision;
  SMRange MixedPrecisionKey;
  std::optional<int64_t> NumProcesses, NumMachines;
  const Entry *DeepSpeed = nullptr;
  bool IsDeepSpeed = false;
  StringSet<> Seen;
  for (const Entry &E : Top) {
    StringRef Key = E.Key;
    if (!Seen.insert(Key).second)
      report(Rule::DuplicateKey, E.KeyRange,
             "duplicate key \"" + Key +
                 "\": accelerate silently keeps the last value");
    if (!is_contained(TopLevelKeys, Key)) {
      report(Rule::Accelerate, E.KeyRange,
             "unknown key `" + Key +
                 "`: accelerate refuses the file (had unknown keys)");
      continue;
    }
    if (Key == "mixed_precision" && E.Value) {
      MixedPrecisionKey = E.KeyRange;
      if (!E.Quoted && isYamlBoolWord(*E.Value)) {
        report(Rule::Accelerate, E.ValueRange,
               "unquoted `" + *E.Value +
                   "` is a YAML boolean, not a string; accelerate launch "
                   "fails ('bool' object has no attribute 'lower'): write '" +
                   *E.Value + "' in quotes")
            .fix(E.ValueRange, "'" + *E.Value + "'");
        continue;
      }
      std::string Lower = StringRef(*E.Value).lower();
      if (Lower != "no" && Lower != "fp8" && Lower != "fp16" &&
          Lower != "bf16")
        report(Rule::Accelerate, E.ValueRange,
               "mixed_precision must be no, fp8, fp16 or bf16, not " +
                   *E.Value);
      MixedPrecision = Lower;
    } else if (Key == "distributed_type" && E.Value) {
      if (!E.Quoted && isYamlBoolWord(*E.Value))
        report(Rule::Accelerate, E.ValueRange,
               "unquoted `" + *E.Value +
                   "` is a YAML boolean; accelerate keeps it as a boolean "
                   "and matches no distributed type: write '" + *E.Value +
                   "' in quotes");
      IsDeepSpeed = *E.Value == "DEEPSPEED";
    } else if ((Key == "num_processes" || Key == "num_machines") && E.Value) {
      int64_t N;
      if (StringRef(*E.Value).getAsInteger(10, N))
        report(Rule::TypeMismatch, E.ValueRange,
               "`" + Key + "` must be an integer, not " + *E.Value);
      else
        (Key == "num_processes" ? NumProcesses : NumMachines) = N;
    } else if (Key == "deepspeed_config") {
      DeepSpeed = &E;
      if (!E.IsMapping && !E.IsNull)
        report(Rule::NotAnObject, E.ValueRange,
               "deepspeed_config must be a mapping");
    }
  }
  if (NumProcesses && NumMachines && *NumMachines > 0 &&
      *NumProcesses % *NumMachines != 0)
    report(Rule::Accelerate, Severity::Warning, RootRange,
           "num_processes " + Twine(*NumProcesses) +
               " is not a multiple of num_machines " + Twine(*NumMachines) +
               "; each machine runs num_processes // num_machines");
  if (!DeepSpeed || !DeepSpeed->IsMapping || DeepSpeed->Children.empty())
    return;
  if (!IsDeepSpeed) {
    report(Rule::UnusedKey, DeepSpeed->KeyRange,
           "deepspeed_config is used only with distributed_type: DEEPSPEED");
    return;
  }
  std::optional<int64_t> WorldSize = Options.WorldSize;
  if (!WorldSize && NumProcesses && *NumProcesses > 0)
    WorldSize = NumProcesses; // The total over all machines.
  if (Options.MixedPrecision)
    MixedPrecision = Options.MixedPrecision;
  checkDeepSpeedSection(*DeepSpeed, MixedPrecision, MixedPrecisionKey,
                        WorldSize);
}

void AccelerateLinter::checkDeepSpeedSection(
    const Entry &Section, std::optional<std::string> MixedPrecision,
    SMRange MixedPrecisionKey, std::optional<int64_t> WorldSize) {
  std::optional<std::string> ConfigFile;
  SMRange ConfigFileRange;
  std::vector<std::pair<std::string, SMRange>> Ignored;
  std::optional<int64_t> Stage;
  SMRange InitFlag;
  bool InitOn = false;
  for (const Entry &E : Section.Children) {
    StringRef Key = E.Key;
    const DeepSpeedKey *Spec = nullptr;
    for (const DeepSpeedKey &K : DeepSpeedKeys)
      if (K.Name == Key)
        Spec = &K;
    if (!Spec) {
      Diagnostic &D =
          report(Rule::IgnoredKey, E.KeyRange,
                 "unknown key `" + Key +
                     "` in deepspeed_config: accelerate ignores it");
      for (const DeepSpeedKey &K : DeepSpeedKeys)
        if (K.Name.edit_distance(Key, true, 3) <= 3)
          D.note(E.KeyRange, "did you mean `" + K.Name.str() + "`?");
      continue;
    }
    if (is_contained(IgnoredWithConfigFile, Key))
      Ignored.emplace_back(Key.str(), E.KeyRange);
    if (!E.Value)
      continue;
    StringRef V = *E.Value;
    if (Spec->Kind == "stage") {
      int64_t N;
      if (V.getAsInteger(10, N) || N < 0 || N > 3)
        report(Rule::InvalidValue, E.ValueRange,
               "zero_stage must be 0, 1, 2 or 3, not " + V);
      else
        Stage = N;
    } else if (Spec->Kind == "device") {
      std::string L = V.lower();
      if (L != "none" && L != "cpu" && L != "nvme")
        report(Rule::InvalidValue, E.ValueRange,
               "`" + Key + "` must be none, cpu or nvme, not " + V);
    } else if (Spec->Kind == "int-or-auto") {
      int64_t N;
      if (V != "auto" && (V.getAsInteger(10, N) || N <= 0))
        report(Rule::InvalidValue, E.ValueRange,
               "`" + Key + "` must be a positive integer or auto, not " + V);
    } else if (Spec->Kind == "float-or-auto") {
      double D;
      if (!V.equals_insensitive("auto") && V.getAsDouble(D))
        report(Rule::InvalidValue, E.ValueRange,
               "`" + Key + "` must be a number or auto, not " + V);
    } else if (Spec->Kind == "launcher") {
      static const StringRef Launchers[] = {"pdsh",  "standard", "openmpi",
                                            "mvapich", "mpich",  "nossh",
                                            "slurm"};
      if (!is_contained(Launchers, V))
        report(Rule::InvalidValue, E.ValueRange,
               "deepspeed_multinode_launcher must be pdsh, standard, openmpi, "
               "mvapich, mpich, nossh or slurm, not " + V);
    } else if (Spec->Kind == "path") {
      if (V != "none") {
        ConfigFile = V.str();
        ConfigFileRange = E.ValueRange;
      }
    } else if (Key == "zero3_init_flag") {
      InitFlag = E.KeyRange;
      InitOn = V.equals_insensitive("true") || V == "1" ||
               V.equals_insensitive("yes") || V.equals_insensitive("on") ||
               V.equals_insensitive("y") || V.equals_insensitive("t");
    } else if (Key == "zero3_save_16bit_model" &&
               !V.equals_insensitive("true") &&
               !V.equals_insensitive("false")) {
      report(Rule::InvalidValue, E.ValueRange,
             "accelerate reads zero3_save_16bit_model as true only when it is "
             "exactly true; `" + V + "` means false");
    }
    if (Key.endswith("_nvme_path"))
      report(Rule::UnusedKey, E.KeyRange,
             "`" + Key + "` is never passed on by accelerate launch; set the "
                         "path in the ds_config's offload section");
  }
  if (InitOn && Stage && *Stage != 3)
    report(Rule::UnusedKey, InitFlag,
           "zero3_init_flag applies to ZeRO stage 3 only; accelerate resets "
           "it to false at stage " + Twine(*Stage));
  if (!ConfigFile)
    return;
  if (MixedPrecisionKey.isValid())
    Ignored.emplace_back("mixed_precision", MixedPrecisionKey);
  for (auto &[Key, Range] : Ignored)
    report(Rule::Accelerate, Range,
           "`" + Key + "` next to deepspeed_config_file: accelerate refuses "
                       "the combination (ValueError: the following accelerate "
                       "config variables will be ignored); set it in the "
                       "DeepSpeed config file instead");
  lintReferencedConfig(*ConfigFile, ConfigFileRange, MixedPrecision,
                       WorldSize);
}

void AccelerateLinter::lintReferencedConfig(
    StringRef File, SMRange Where, std::optional<std::string> MixedPrecision,
    std::optional<int64_t> WorldSize) {
  StringRef YamlPath = Engine.path(BufferID);
  SmallString<256> NextToYaml = sys::path::parent_path(YamlPath);
  sys::path::append(NextToYaml, File);
  std::string Found;
  if (sys::fs::exists(File))
    Found = File.str();
  else if (!sys::path::is_absolute(File) && sys::fs::exists(NextToYaml))
    Found = NextToYaml.str().str();
  if (Found.empty()) {
    report(Rule::Accelerate, Severity::Warning, Where,
           "deepspeed_config_file `" + File +
               "` was not found here or next to this file; accelerate opens "
               "it relative to the working directory of the run");
    return;
  }
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buffer =
      MemoryBuffer::getFile(Found, /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  if (!Buffer) {
    report(Rule::Accelerate, Where,
           "cannot read `" + Found + "`: " + Buffer.getError().message());
    return;
  }
  unsigned ID = Engine.addFile(std::move(*Buffer));
  LintOptions Inner = Options;
  Inner.WorldSize = WorldSize;
  Inner.MixedPrecision = MixedPrecision;
  lintConfig(Engine, ID, Inner);
}

} // namespace

void lintAccelerateConfig(DiagnosticEngine &Engine, unsigned BufferID,
                          const LintOptions &Options) {
  AccelerateLinter(Engine, BufferID, Options).run();
}

} // namespace dsc
