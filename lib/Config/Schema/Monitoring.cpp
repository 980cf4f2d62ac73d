//===- Monitoring.cpp - Schema: logging and monitors ----------------------===//
//
// comms_logger, the four monitors and timers.throughput are pydantic models
// (unknown keys rejected, "auto" dropped). The monitors are top-level keys;
// get_monitor_config (monitor/config.py) gathers them into one object.
//
//===----------------------------------------------------------------------===//

#include "SchemaParts.h"
#include "dsc/Config/SchemaBuilder.h"

namespace dsc::schema {

static const KeySpec Keys[] = {
    section("comms_logger", Model).doc("Log communication operations")
        .noEffect("DeepSpeed times and logs its collectives, synchronizing "
                  "the device after each one while the logger is on"),
    key("comms_logger.enabled", Bool).def("false").doc("Enable the logger"),
    key("comms_logger.prof_all", Bool).def("true").doc("Profile every op"),
    key("comms_logger.prof_ops", Array).def("[]").of(String)
        .doc("Ops to profile when prof_all is false"),
    key("comms_logger.verbose", Bool).def("false").doc("Log every op"),
    key("comms_logger.debug", Bool).def("false")
        .doc("Record the calling function"),

    section("tensorboard", Model).doc("TensorBoard monitor")
        .noEffect("DeepSpeed writes the loss, learning rate and loss scale "
                  "as TensorBoard events"),
    key("tensorboard.enabled", Bool).def("false").doc("Enable it"),
    key("tensorboard.output_path", String).def("\"\"").doc("Log folder"),
    key("tensorboard.job_name", String).def("\"DeepSpeedJobName\"")
        .doc("Run name"),

    section("wandb", Model).doc("Weights & Biases monitor")
        .noEffect("DeepSpeed logs the loss, learning rate and loss scale to "
                  "Weights & Biases"),
    key("wandb.enabled", Bool).def("false").doc("Enable it"),
    key("wandb.group", String).def("null").nullable().doc("Run group"),
    key("wandb.team", String).def("null").nullable().doc("Team (entity)"),
    key("wandb.project", String).def("\"deepspeed\"").doc("Project"),

    section("csv_monitor", Model).doc("CSV monitor")
        .noEffect("DeepSpeed writes the loss, learning rate and loss scale "
                  "to CSV files"),
    key("csv_monitor.enabled", Bool).def("false").doc("Enable it"),
    key("csv_monitor.output_path", String).def("\"\"").doc("Log folder"),
    key("csv_monitor.job_name", String).def("\"DeepSpeedJobName\"")
        .doc("Run name"),

    section("comet", Model).doc("Comet monitor")
        .noEffect("DeepSpeed logs the loss, learning rate and loss scale to "
                  "Comet"),
    key("comet.enabled", Bool).def("false").doc("Enable it"),
    key("comet.samples_log_interval", Int).def("100").doc("Samples between "
                                                          "logs"),
    key("comet.project", String).def("null").nullable().doc("Project"),
    key("comet.workspace", String).def("null").nullable().doc("Workspace"),
    key("comet.api_key", String).def("null").nullable().doc("API key"),
    key("comet.experiment_name", String).def("null").nullable()
        .doc("Experiment name"),
    key("comet.experiment_key", String).def("null").nullable()
        .doc("Experiment key (32-50 alphanumerics)"),
    key("comet.online", Bool).def("null").nullable().doc("Log online"),
    key("comet.mode", String).def("null").nullable()
        .oneOf("get|create|get_or_create").doc("Experiment mode"),

    misnomer("monitor_config", nullptr)
        .doc("DeepSpeed reads no such key: the monitors are the top-level "
             "sections tensorboard, wandb, csv_monitor and comet "
             "(monitor_config is the name of the parsed object, not of a "
             "section)"),

    section("timers", DictSection).doc("Engine timers")
        .noEffect("DeepSpeed measures and reports training throughput "
                  "(samples per second)"),
    section("timers.throughput", Model).doc("Throughput timer"),
    key("timers.throughput.enabled", Bool).def("true").doc("Enable it"),
    key("timers.throughput.synchronized", Bool).def("true")
        .doc("Synchronize the device when timing")
        .noEffect("DeepSpeed synchronizes the device when the throughput "
                  "timer starts and stops, for exact timings"),
};

llvm::ArrayRef<KeySpec> monitoringKeys() { return Keys; }

} // namespace dsc::schema
