# Checks the JSON Schema that `dsc schema` printed (used by dsc-schema.test).
import json
import sys

schema = json.load(open(sys.argv[1]))
assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
props = schema["properties"]
zero = props["zero_optimization"]["properties"]
stage = zero["stage"]["anyOf"][0]
assert stage["type"] == "integer" and stage["enum"] == [0, 1, 2, 3], stage
assert zero["stage"]["anyOf"][1] == {"const": "auto"}
assert props["zero_optimization"]["additionalProperties"] is False
# An alias is a property of its own with the same schema.
assert zero["stage3_prefetch_bucket_size"]["anyOf"][0]["minimum"] == 0
assert "deprecationMessage" in zero["cpu_offload"]
offload = zero["offload_optimizer"]
assert offload["type"] == ["object", "null"]
assert offload["properties"]["device"]["anyOf"][0]["enum"] == ["none", "cpu", "nvme"]
# Optimizer params merge all classes and allow the keys of torch classes.
params = props["optimizer"]["properties"]["params"]
assert "additionalProperties" not in params
assert "set_grad_none" in params["properties"]
assert props["fp16"]["properties"]["loss_scale"]["default"] == 0
print("schema ok")
