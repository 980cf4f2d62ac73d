//===- Optimizer.cpp - Schema: optimizer and scheduler --------------------===//
//
// optimizer.params and scheduler.params are keyword arguments of the class
// DeepSpeed builds at engine start, so a key the constructor does not take is
// a TypeError there, and values arrive unconverted. Which class that is
// depends on optimizer.type, the offload device and torch_adam
// (engine.py _configure_basic_optimizer); the entries below name the classes
// they apply to in Variants, and OptimizerRules.cpp picks the class.
//
//===----------------------------------------------------------------------===//

#include "SchemaParts.h"
#include "dsc/Config/SchemaBuilder.h"

namespace dsc::schema {

// Constructor families, as Variants lists.
#define ADAM_CLASSES "FusedAdam|DeepSpeedCPUAdam|torch.Adam|torch.AdamW"
#define CPU_CLASSES                                                            \
  "DeepSpeedCPUAdam|DeepSpeedCPUAdagrad|DeepSpeedCPULion"
#define ONEBIT_CLASSES "OnebitAdam|ZeroOneAdam|OnebitLamb"
#define LAMB_CLASSES "FusedLamb|OnebitLamb"
#define TORCH_CLASSES "torch.Adam|torch.AdamW|torch.Adagrad"
#define WARMUP_SCHEDULERS "WarmupLR|WarmupDecayLR|WarmupCosineLR"

static const KeySpec Keys[] = {
    section("optimizer", DictSection)
        .doc("The optimizer DeepSpeed builds; without it the client's "
             "optimizer is used")
        .planned("the optimizer's class and hyperparameters"),
    key("optimizer.type", String)
        .doc("adam, adamw, adagrad, lamb, lion, onebitadam, zerooneadam, "
             "onebitlamb, muadam, muadamw, musgd, muon (any case), or the "
             "exact name of a torch.optim class")
        .planned("dsc plans Adam and AdamW (FusedAdam, DeepSpeedCPUAdam, "
                 "torch.optim) and refuses other classes by name"),
    section("optimizer.params", Kwargs).variantKey("optimizer.type")
        .doc("Keyword arguments of the optimizer's constructor")
        .planned("the optimizer's arguments; each key says how it is planned"),
    key("optimizer.legacy_fusion", Bool).def("false")
        .doc("Old fused-Adam step interface (fp16 without ZeRO); broken with "
             "every optimizer DeepSpeed builds itself")
        .refused("the old fused-Adam step interface"),

    // Shared hyperparameters.
    key("optimizer.params.lr", Float).def("0.001").min(0).autoBy(AutoBoth)
        .variants(ADAM_CLASSES "|FusedLamb|" ONEBIT_CLASSES
                  "|FusedLion|DeepSpeedCPULion|Muon|mup")
        .doc("Learning rate (the HF Trainer fills --learning_rate)")
        .planned("the step's learning rate"),
    key("optimizer.params.lr", Float).def("0.01").min(0).autoBy(AutoBoth)
        .variants("torch.Adagrad|DeepSpeedCPUAdagrad")
        .doc("Learning rate (the HF Trainer fills --learning_rate)")
        .planned("the step's learning rate"),
    key("optimizer.params.betas", Array).def("[0.9, 0.999]").of(Float)
        .autoBy(AutoTrainer)
        .variants(ADAM_CLASSES "|FusedLamb|" ONEBIT_CLASSES
                  "|FusedLion|DeepSpeedCPULion|Muon|mup")
        .doc("Adam's (beta1, beta2) (the HF Trainer fills --adam_beta1/2)")
        .planned("Adam's moment decay rates"),
    key("optimizer.params.eps", Float).def("1e-08").min(0).autoBy(AutoTrainer)
        .variants(ADAM_CLASSES "|FusedLamb|" ONEBIT_CLASSES "|Muon|mup")
        .doc("Term added to the denominator (the HF Trainer fills "
             "--adam_epsilon)")
        .planned("Adam's epsilon"),
    key("optimizer.params.eps", Float).def("1e-10").min(0).autoBy(AutoTrainer)
        .variants("torch.Adagrad|DeepSpeedCPUAdagrad")
        .doc("Term added to the denominator")
        .planned("Adam's epsilon"),
    key("optimizer.params.weight_decay", Float).def("0").min(0)
        .autoBy(AutoBoth)
        .variants(ADAM_CLASSES "|FusedLamb|" ONEBIT_CLASSES
                  "|torch.Adagrad|DeepSpeedCPUAdagrad|FusedLion|"
                  "DeepSpeedCPULion|Muon|mup")
        .doc("Weight decay (the HF Trainer fills --weight_decay)")
        .planned("decoupled weight decay"),
    key("optimizer.params.bias_correction", Bool).def("true")
        .variants("FusedAdam|DeepSpeedCPUAdam|FusedLamb|" ONEBIT_CLASSES)
        .doc("Apply Adam's bias correction")
        .planned("false: Adam without bias correction, as dsrun then runs "
                 "it"),
    key("optimizer.params.amsgrad", Bool).def("false")
        .variants(ADAM_CLASSES "|DeepSpeedCPUAdagrad|FusedLamb|" ONEBIT_CLASSES
                  "|mup")
        .doc("AMSGrad; the fused and 1-bit kernels raise RuntimeError when "
             "true")
        .refused("AMSGrad keeps the largest second moment"),

    // Popped by the engine before construction (adam/adamw only).
    key("optimizer.params.torch_adam", Bool).def("false")
        .variants(ADAM_CLASSES)
        .doc("Build torch.optim.Adam/AdamW instead of DeepSpeed's fused or CPU "
             "Adam")
        .planned("the same update whichever implementation DeepSpeed picks: dsrun "
                 "runs its own fused kernel"),
    key("optimizer.params.adam_w_mode", Bool).def("true")
        .variants(ADAM_CLASSES)
        .doc("Decoupled weight decay; true by default, so type \"adam\" "
             "behaves as AdamW unless this is false")
        .planned("false: Adam adds the decay to the gradient (L2), as dsrun "
                 "then does; the type AdamW decouples it whatever this says"),
    misnomer("optimizer.params.adamw_mode", "optimizer.params.adam_w_mode")
        .variants(ADAM_CLASSES)
        .doc("DeepSpeed passes adamw_mode itself; the config key is "
             "adam_w_mode"),
    key("optimizer.params.fp32_optimizer_states", Bool).def("true")
        .variants(CPU_CLASSES)
        .doc("CPU optimizers: keep moments in fp32 (forced false with "
             "bf16_optimizer_states)")
        .refused("false: DeepSpeedCPUAdam keeps the moments in 16 bits"),
    key("optimizer.params.set_grad_none", Bool).def("true")
        .variants("FusedAdam|FusedLion")
        .doc("Set gradients to None in zero_grad")
        .noEffect("how gradients are cleared"),

    // torch.optim classes (torch_adam, or adagrad on the GPU).
    key("optimizer.params.foreach", Bool).def("null").nullable()
        .variants(TORCH_CLASSES).doc("torch: use the foreach implementation")
        .planned("the same update whichever implementation DeepSpeed picks: dsrun "
                 "runs its own fused kernel"),
    key("optimizer.params.fused", Bool).def("null").nullable()
        .variants(TORCH_CLASSES).doc("torch: use the fused implementation")
        .planned("the same update whichever implementation DeepSpeed picks: dsrun "
                 "runs its own fused kernel"),
    key("optimizer.params.maximize", Bool).def("false")
        .variants(TORCH_CLASSES).doc("torch: maximize the objective")
        .refused("the step climbs the objective"),
    key("optimizer.params.capturable", Bool).def("false")
        .variants("torch.Adam|torch.AdamW")
        .doc("torch: safe to capture in a CUDA graph")
        .planned("the same update whichever implementation DeepSpeed picks: dsrun "
                 "runs its own fused kernel"),
    key("optimizer.params.differentiable", Bool).def("false")
        .variants(TORCH_CLASSES).doc("torch: autograd through the step")
        .planned("the same update whichever implementation DeepSpeed picks: dsrun "
                 "runs its own fused kernel"),
    key("optimizer.params.decoupled_weight_decay", Bool).def("false")
        .variants("torch.Adam").doc("torch.optim.Adam: AdamW-style decay")
        .planned("torch.optim.Adam decays like AdamW when true and adds "
                 "the decay to the gradient (L2) when false, as dsrun does"),
    key("optimizer.params.lr_decay", Float).def("0").min(0)
        .variants("torch.Adagrad").doc("Adagrad learning-rate decay")
        .noEffect("used only by Adagrad, which dsc refuses by name"),
    key("optimizer.params.initial_accumulator_value", Float).def("0").min(0)
        .variants("torch.Adagrad").doc("Adagrad's initial accumulator")
        .noEffect("used only by Adagrad, which dsc refuses by name"),

    // Lamb and the 1-bit family.
    key("optimizer.params.eps_inside_sqrt", Bool).def("false")
        .variants("FusedLamb|" ONEBIT_CLASSES)
        .doc("Add eps inside the square root")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.max_coeff", Float).def("10.0")
        .variants(LAMB_CLASSES).doc("Upper bound of Lamb's trust ratio")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.min_coeff", Float).def("0.01")
        .variants(LAMB_CLASSES).doc("Lower bound of Lamb's trust ratio")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.freeze_step", Int).def("100000").min(0)
        .variants("OnebitAdam|OnebitLamb")
        .doc("Warm-up steps before 1-bit compression starts")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.cuda_aware", Bool).def("false")
        .variants(ONEBIT_CLASSES).doc("CUDA-aware MPI for compressed "
                                      "communication")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.comm_backend_name", String).def("\"nccl\"")
        .oneOf("nccl|mpi|hccl|compressed").variants(ONEBIT_CLASSES)
        .doc("Backend of the compressed all-reduce")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.var_freeze_step", Int).def("100000").min(0)
        .variants("ZeroOneAdam").doc("0/1 Adam: steps before the variance "
                                     "freezes")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.var_update_scaler", Int).def("16")
        .variants("ZeroOneAdam").doc("0/1 Adam: variance update interval "
                                     "scaler")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.local_step_scaler", Int).def("32678")
        .variants("ZeroOneAdam").doc("0/1 Adam: local step interval scaler")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.local_step_clipper", Int).def("16")
        .variants("ZeroOneAdam").doc("0/1 Adam: cap of the local step "
                                     "interval")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.coeff_beta", Float).def("0.9")
        .variants("OnebitLamb").doc("1-bit Lamb: coefficient momentum")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.factor_max", Float).def("4.0")
        .variants("OnebitLamb").doc("1-bit Lamb: upper scaling factor")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.factor_min", Float).def("0.5")
        .variants("OnebitLamb").doc("1-bit Lamb: lower scaling factor")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.factor_threshold", Float).def("0.1")
        .variants("OnebitLamb").doc("1-bit Lamb: scaling threshold")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),

    // Muon (MuonWithAuxAdam reads a fixed list; other keys are ignored).
    key("optimizer.params.momentum", Float).def("0.95").variants("Muon")
        .doc("Muon momentum")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.ns_method", String).def("\"gram\"")
        .oneOf("standard|gram").variants("Muon")
        .doc("Newton-Schulz iteration of Muon")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.muon_lr", Float).variants("Muon")
        .doc("Learning rate of the Muon group (overrides lr there)")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),
    key("optimizer.params.adam_lr", Float).variants("Muon")
        .doc("Learning rate of the auxiliary Adam group")
        .noEffect("used only by Lamb, the 1-bit optimizers and Muon, "
                  "which dsc refuses by name"),

    misnomer("optimizer.params.max_grad_norm", "gradient_clipping")
        .doc("DeepSpeed raises ValueError when this is in optimizer.params; "
             "clip with the top-level gradient_clipping"),

    // Scheduler.
    section("scheduler", DictSection)
        .doc("The learning-rate scheduler DeepSpeed builds")
        .planned("dsrun follows the learning-rate schedule step by step"),
    key("scheduler.type", String)
        .doc("WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest, "
             "or the exact name of a torch.optim.lr_scheduler class")
        .planned("dsrun's learning-rate schedule, step by step"),
    section("scheduler.params", Kwargs).variantKey("scheduler.type")
        .doc("Keyword arguments of the scheduler's constructor; required "
             "whenever type is given")
        .planned("the schedule's arguments; each key says how it is planned"),
    key("scheduler.params.last_batch_iteration", Int).def("-1")
        .variants(WARMUP_SCHEDULERS "|OneCycle|LRRangeTest")
        .doc("Iteration to resume from")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.warmup_min_lr", Float).def("0.0")
        .variants("WarmupLR|WarmupDecayLR").autoBy(AutoBoth)
        .doc("Learning rate at the start of warmup")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.warmup_max_lr", Float).def("null").nullable()
        .variants("WarmupLR").autoBy(AutoBoth)
        .doc("Learning rate at the end of warmup; null keeps the optimizer's")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.warmup_max_lr", Float).def("0.001")
        .variants("WarmupDecayLR").autoBy(AutoBoth)
        .doc("Learning rate at the end of warmup")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.warmup_num_steps", Int).def("1000").above(0)
        .exactType()
        .onAuto("ValueError when the scheduler is built (warmup_num_steps "
                "must be a positive integer)")
        .variants(WARMUP_SCHEDULERS).autoBy(AutoBoth)
        .doc("Warmup steps; must be a positive integer (DeepSpeed >= 0.19.3)")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.warmup_type", String).def("\"log\"")
        .oneOf("log|linear").variants(WARMUP_SCHEDULERS)
        .doc("Shape of the warmup; other values fall back to log with a "
             "warning")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.total_num_steps", Int).required().min(0)
        .variants("WarmupDecayLR|WarmupCosineLR").autoBy(AutoBoth)
        .doc("Steps of the whole schedule")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.warmup_min_ratio", Float).def("0.0")
        .variants("WarmupCosineLR")
        .doc("Starting learning rate as a share of the optimizer's")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.cos_min_ratio", Float).def("0.0001")
        .variants("WarmupCosineLR")
        .doc("Final learning rate as a share of the optimizer's")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.cycle_min_lr", Float).required().variants("OneCycle")
        .doc("Lowest learning rate of the cycle")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.cycle_max_lr", Float).required().variants("OneCycle")
        .doc("Highest learning rate of the cycle")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.decay_lr_rate", Float).def("0.0")
        .variants("OneCycle").doc("Learning-rate decay after the cycle")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.cycle_first_step_size", Float).def("2000").above(0)
        .variants("OneCycle").doc("Steps of the rising half")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.cycle_second_step_size", Float).def("null")
        .nullable().min(0).variants("OneCycle")
        .doc("Steps of the falling half; null means the same as the first")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.cycle_first_stair_count", Int).def("0")
        .variants("OneCycle").doc("Stairs in the rising half (0 = smooth)")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.cycle_second_stair_count", Int).def("null")
        .nullable().variants("OneCycle")
        .doc("Stairs in the falling half; null means the same as the first")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.decay_step_size", Float).def("0")
        .variants("OneCycle").doc("Steps between decays (0 = no decay)")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.cycle_momentum", Bool).def("true")
        .variants("OneCycle").doc("Cycle momentum (beta1) inversely to the "
                                  "learning rate")
        .planned("OneCycle also cycles Adam's beta1, as dsrun does"),
    key("scheduler.params.cycle_min_mom", Float).def("0.8")
        .variants("OneCycle").doc("Lowest momentum")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.cycle_max_mom", Float).def("0.9")
        .variants("OneCycle").doc("Highest momentum")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.decay_mom_rate", Float).def("0.0")
        .variants("OneCycle").doc("Momentum decay after the cycle")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.lr_range_test_min_lr", Float).def("0.001")
        .variants("LRRangeTest").doc("Starting learning rate")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.lr_range_test_step_size", Int).def("2000").above(0)
        .exactType()
        .variants("LRRangeTest")
        .doc("Steps per increase; must be a positive integer")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.lr_range_test_step_rate", Float).def("1.0")
        .variants("LRRangeTest").doc("Increase per interval")
        .planned("dsrun's learning-rate schedule, step by step"),
    key("scheduler.params.lr_range_test_staircase", Bool).def("false")
        .variants("LRRangeTest").doc("Increase in stairs instead of smoothly")
        .planned("dsrun's learning-rate schedule, step by step"),
    misnomer("scheduler.params.warmup_max_lr", nullptr)
        .variants("WarmupCosineLR")
        .doc("WarmupCosineLR scales the optimizer's lr by ratios; it takes "
             "warmup_min_ratio and cos_min_ratio instead"),
    misnomer("scheduler.params.warmup_min_lr", nullptr)
        .variants("WarmupCosineLR")
        .doc("WarmupCosineLR scales the optimizer's lr by ratios; it takes "
             "warmup_min_ratio and cos_min_ratio instead"),
};

#undef ADAM_CLASSES
#undef CPU_CLASSES
#undef ONEBIT_CLASSES
#undef LAMB_CLASSES
#undef TORCH_CLASSES
#undef WARMUP_SCHEDULERS

llvm::ArrayRef<KeySpec> optimizerKeys() { return Keys; }

} // namespace dsc::schema
