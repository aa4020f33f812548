# MLIR/LLVM 22 from Debian (llvm-22-dev, libmlir-22-dev). We link the two shared libraries
# (libMLIR.so, libLLVM.so) and never the static MLIR* archives (duplicate registrations).
find_package(MLIR REQUIRED CONFIG HINTS /usr/lib/llvm-22/lib/cmake/mlir)
message(STATUS "MLIR ${LLVM_PACKAGE_VERSION} from ${MLIR_DIR}")
set(SEXTANT_LLVM_TOOLS_DIR ${LLVM_TOOLS_BINARY_DIR})
separate_arguments(SEXTANT_LLVM_DEFS NATIVE_COMMAND ${LLVM_DEFINITIONS})

add_library(sextant_mlir INTERFACE)
target_include_directories(sextant_mlir SYSTEM INTERFACE ${LLVM_INCLUDE_DIRS} ${MLIR_INCLUDE_DIRS})
target_compile_definitions(sextant_mlir INTERFACE ${SEXTANT_LLVM_DEFS})
target_link_libraries(sextant_mlir INTERFACE MLIR LLVM)
