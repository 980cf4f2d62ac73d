//===- Precision.cpp - Schema: fp16, bf16, amp, torch_autocast, data_types ===//
//
// fp16 and bf16 are pydantic models (runtime/precision_config.py), so
// unknown keys there are rejected: the fp16 loss-scaling keys inside bf16 are
// the classic case (docs/lint.md). amp, torch_autocast and data_types
// are plain dicts.
//
//===----------------------------------------------------------------------===//

#include "SchemaParts.h"
#include "dsc/Config/SchemaBuilder.h"

namespace dsc::schema {

static constexpr const char *Dtypes =
    "torch.float16|fp16|float16|half|torch.float32|fp32|float32|float|"
    "torch.bfloat16|bf16|bfloat16|torch.int8|int8";

static const KeySpec Keys[] = {
    section("fp16", Model).doc("fp16 mixed precision with loss scaling")
        .planned("fp16 parameters, fp32 masters and the loss scaler"),
    key("fp16.enabled", Bool).def("false").autoBy(AutoBoth)
        .doc("Train in fp16 with fp32 master weights")
        .planned("fp16 parameters and gradients, fp32 masters"),
    key("fp16.auto_cast", Bool).def("false")
        .doc("Cast the model's inputs to fp16")
        .noEffect("casts floating-point model inputs to fp16; the plan's inputs are "
                  "token ids"),
    key("fp16.loss_scale", Float).def("0").min(0).strictNumber()
        .doc("Static loss scale; 0 selects dynamic loss scaling")
        .planned("dsrun's loss scaler"),
    key("fp16.initial_scale_power", Int).def("16")
        .doc("Dynamic scaling starts at 2^initial_scale_power")
        .planned("dsrun's loss scaler"),
    key("fp16.loss_scale_window", Int).def("1000").strictNumber()
        .doc("Overflow-free steps before the dynamic scale grows; > 0 when "
             "dynamic")
        .planned("dsrun's loss scaler"),
    key("fp16.hysteresis", Int).def("2")
        .doc("Overflows tolerated before the dynamic scale shrinks")
        .planned("dsrun's loss scaler"),
    key("fp16.consecutive_hysteresis", Bool).def("false")
        .doc("Refill the hysteresis after each overflow-free step")
        .planned("dsrun's loss scaler"),
    key("fp16.min_loss_scale", Int).def("1").strictNumber()
        .doc("Floor of the dynamic scale (an integer; > 0 when dynamic)")
        .planned("dsrun's loss scaler"),
    key("fp16.fp16_master_weights_and_grads", Bool).def("false")
        .doc("Keep master weights and gradients in fp16 (ZeRO 1-3 with CPU "
             "offload and DeepSpeedCPUAdam)")
        .refused("masters and gradients in fp16; dsc keeps fp32 masters"),

    section("bf16", Model).alias("bfloat16")
        .doc("bf16 mixed precision (no loss scaling)")
        .planned("bf16 parameters and fp32 masters"),
    key("bf16.enabled", Bool).def("false").autoBy(AutoBoth)
        .doc("Train in bf16 with fp32 master weights")
        .planned("bf16 parameters and gradients, fp32 masters"),
    key("bf16.immediate_grad_update", Bool).def("false")
        .doc("Accumulate into fp32 gradients as soon as they are produced")
        .refused("gradients are added into fp32 as soon as each is made"),
    key("bf16.check_grad_overflow", Bool).def("true")
        .doc("Skip the step when gradients hold inf or nan")
        .planned("true: DeepSpeed skips a step whose gradients hold inf or NaN, "
                 "and dsrun stops there; false is refused"),
    key("bf16.bf16_master_weights_and_grads", Bool).def("false")
        .doc("Keep master weights and gradients in bf16 (ZeRO 1-3)")
        .planned("bf16 master weights and step gradients on the GPU; with "
                 "optimizer offload refused"),
    key("bf16.bf16_optimizer_states", Bool).def("false")
        .doc("Keep Adam moments in bf16; needs bf16_master_weights_and_grads")
        .planned("Adam's moments in bf16, updated in fp32 as FusedAdam does"),
    misnomer("bf16.check_overflow", "bf16.check_grad_overflow")
        .doc("Name in DeepSpeed's stale constants; the model reads "
             "check_grad_overflow"),

    section("amp", DictSection)
        .doc("NVIDIA Apex AMP; every key but enabled goes to amp.initialize")
        .refused("Apex AMP casts the model by opt_level; dsc plans fp16, bf16 or "
                 "fp32"),
    key("amp.enabled", Bool).required()
        .doc("Use Apex AMP (transformers v4 filled an \"auto\" here; v5 "
             "does not)"),
    key("amp.opt_level", String).oneOf("O0|O1|O2|O3")
        .doc("Apex optimization level (passed to amp.initialize)"),

    section("torch_autocast", DictSection).doc("Native torch.autocast")
        .refused("torch.autocast runs chosen modules in lower precision"),
    key("torch_autocast.enabled", Bool).def("false").doc("Use torch.autocast"),
    key("torch_autocast.dtype", String).def("null").nullable().oneOf(Dtypes)
        .onAuto("ValueError: Invalid dtype for torch autocast")
        .doc("Autocast dtype"),
    key("torch_autocast.lower_precision_safe_modules", Array).of(String)
        .doc("Class paths of modules that may run in lower precision"),

    section("data_types", DictSection).doc("Data types of buffers")
        .planned("buffer dtypes; each key inside says how it is planned"),
    key("data_types.grad_accum_dtype", String).def("null").nullable()
        .oneOf(Dtypes).onAuto("ValueError from DeepSpeed's dtype table at "
                              "engine start")
        .doc("Gradient accumulation dtype; null follows the model dtype")
        .planned("the dtype gradients accumulate in"),
    key("data_types.param_dtype", String).def("null").nullable().oneOf(Dtypes)
        .onAuto("ValueError from DeepSpeed's dtype table at engine start")
        .doc("Parameter dtype; must match what fp16/bf16 imply")
        .noEffect("must match what fp16 and bf16 imply; lint checks it"),
    key("data_types.buffer_dtype", String).def("null").nullable().oneOf(Dtypes)
        .onAuto("ValueError from DeepSpeed's dtype table at engine start")
        .doc("Dtype of module buffers")
        .refused("module buffers (rotary tables, statistics) are cast to it; the "
                 "plan keeps the model's"),
};

llvm::ArrayRef<KeySpec> precisionKeys() { return Keys; }

} // namespace dsc::schema
