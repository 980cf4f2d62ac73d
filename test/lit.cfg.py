# lit configuration for dsc. Each .test file starts with its RUN and CHECK
# lines; inputs follow, split out with split-file.
import os
import lit.formats

config.name = "dsc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "conformance", "unit", "fuzz"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.dsc_obj_root, "test")

path = os.path.pathsep.join([config.dsc_tools_dir, config.llvm_tools_dir,
                             config.environment.get("PATH", "")])
config.environment["PATH"] = path
# Diagnostics must not depend on the terminal or the locale.
config.environment["LC_ALL"] = "C"
config.substitutions.append(("%dsc_src", config.dsc_src_root))
config.substitutions.append(("%python", config.python_executable))
# The PyTorch exports of test/Compute/Inputs, unzipped by the build.
config.substitutions.append(("%compute_inputs", config.compute_inputs))
# dsrun is built where a CUDA compiler is found; its CPU-side errors are
# tested wherever it exists.
if os.path.exists(os.path.join(config.dsc_tools_dir, "dsrun")):
    config.available_features.add("dsrun")
# Messages for a machine without a GPU are tested only on one.
if os.path.exists("/dev/nvidia0"):
    config.available_features.add("gpu")
