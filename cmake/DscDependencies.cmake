# Finds every dependency of the compiler side. Each comes from a Debian
# package; utils/install-deps.sh installs the set. A missing one stops the
# configure step with the package that provides it.

function(dsc_require found what package)
  if(NOT ${found})
    message(FATAL_ERROR "dsc needs ${what}; install the Debian package "
                        "'${package}' (utils/install-deps.sh installs all of them)")
  endif()
endfunction()

# LLVM 14: Support (command line, YAML, SourceMgr diagnostics), FileCheck, lit.
find_package(LLVM 14 CONFIG HINTS /usr/lib/llvm-14/lib/cmake/llvm)
dsc_require(LLVM_FOUND "LLVM 14" llvm-14-dev)
message(STATUS "LLVM ${LLVM_PACKAGE_VERSION} in ${LLVM_INSTALL_PREFIX}")
add_library(dsc_llvm INTERFACE)
target_include_directories(dsc_llvm SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS})
target_compile_definitions(dsc_llvm INTERFACE ${LLVM_DEFINITIONS})
if(LLVM_LINK_LLVM_DYLIB)
  # Debian ships one shared libLLVM; linking it keeps links fast on 2 cores.
  target_link_libraries(dsc_llvm INTERFACE LLVM)
else()
  llvm_map_components_to_libnames(dsc_llvm_libs support)
  target_link_libraries(dsc_llvm INTERFACE ${dsc_llvm_libs})
endif()

# RapidJSON (header only).
find_path(RAPIDJSON_INCLUDE_DIR rapidjson/reader.h)
dsc_require(RAPIDJSON_INCLUDE_DIR "RapidJSON" rapidjson-dev)
add_library(dsc_rapidjson INTERFACE)
target_include_directories(dsc_rapidjson SYSTEM INTERFACE ${RAPIDJSON_INCLUDE_DIR})

# Graphviz: cgraph builds graphs, gvc lays them out and renders.
find_package(PkgConfig REQUIRED)
pkg_check_modules(GRAPHVIZ IMPORTED_TARGET libcgraph libgvc)
dsc_require(GRAPHVIZ_FOUND "Graphviz (libcgraph, libgvc)" libgraphviz-dev)

# ONNX (protobuf messages and shape inference) and protobuf.
find_package(Protobuf)
dsc_require(Protobuf_FOUND "protobuf" libprotobuf-dev)
find_package(ONNX CONFIG)
dsc_require(ONNX_FOUND "ONNX" libonnx-dev)

# Test tools: GoogleTest, and LLVM's FileCheck and lit.
if(DSC_BUILD_TESTS)
  find_package(GTest)
  dsc_require(GTest_FOUND "GoogleTest" libgtest-dev)
  find_program(FILECHECK FileCheck HINTS ${LLVM_TOOLS_BINARY_DIR})
  dsc_require(FILECHECK "FileCheck" llvm-14-tools)
  find_program(SPLIT_FILE split-file HINTS ${LLVM_TOOLS_BINARY_DIR})
  dsc_require(SPLIT_FILE "split-file" llvm-14-tools)
  find_program(LIT NAMES lit.py lit llvm-lit
               HINTS ${LLVM_INSTALL_PREFIX}/build/utils/lit ${LLVM_TOOLS_BINARY_DIR})
  dsc_require(LIT "lit" llvm-14-tools)
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
endif()
