# gpu_runner_tests: bundles, results files, f16/bf16 conversions, the GEMM reference check, the
# measurement harness on a fake device, the no-device errors and tune-runner as a subprocess.
# Included from tests/CMakeLists.txt and, with -DSEXTANT_RUNNER_ONLY=ON, from the top level.
add_executable(gpu_runner_tests
  ${CMAKE_CURRENT_LIST_DIR}/gemm_host_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bundle_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_runner_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_runner_restart_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/tune_runner_test.cpp)
target_link_libraries(gpu_runner_tests PRIVATE sextant_runtime GTest::gtest_main)
add_dependencies(gpu_runner_tests tune-runner)
target_compile_definitions(gpu_runner_tests PRIVATE TUNE_RUNNER_BIN="$<TARGET_FILE:tune-runner>"
                           SEXTANT_SOURCE_DIR="${CMAKE_CURRENT_LIST_DIR}/../..")
gtest_discover_tests(gpu_runner_tests DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600)
