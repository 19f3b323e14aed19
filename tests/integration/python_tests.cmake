# The Python backend's tests (docs/python.md), registered from tests/integration/CMakeLists.txt.
# The interpreter is KLOOP_TEST_PYTHON_EXECUTABLE (cmake/KloopPython.cmake): one that imports
# numpy. Without one every test exits 77, which ctest reports as skipped. All names start with
# "python." (`ctest -R python`).

# kloop verify / compare end to end on tests/fixtures/python_numpy (numpy only, no GPU).
add_executable(kloop.test.integration.python python_worker_test.cpp python_fork_server_test.cpp)
target_link_libraries(kloop.test.integration.python PRIVATE kloop::library GTest::gtest GTest::gmock kloop_warnings)
target_include_directories(kloop.test.integration.python PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_compile_definitions(kloop.test.integration.python PRIVATE
  KLOOP_TEST_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  KLOOP_TEST_BINARY_DIR="${PROJECT_BINARY_DIR}"
  KLOOP_TEST_PYTHON="${KLOOP_TEST_PYTHON_EXECUTABLE}")
add_dependencies(kloop.test.integration.python kloop)
gtest_discover_tests(kloop.test.integration.python
  TEST_PREFIX "python."
  PROPERTIES LABELS integration SKIP_RETURN_CODE 77 TIMEOUT 600
  DISCOVERY_TIMEOUT 60)
add_dependencies(kloop.test.all kloop.test.integration.python)

# The worker's own unit tests (python/tests, unittest: no pytest needed).
if(KLOOP_TEST_PYTHON_EXECUTABLE)
  add_test(NAME python.worker_unit
    COMMAND ${KLOOP_TEST_PYTHON_EXECUTABLE} -m unittest discover -s ${PROJECT_SOURCE_DIR}/python/tests
            -t ${PROJECT_SOURCE_DIR}/python)
  set_tests_properties(python.worker_unit PROPERTIES
    ENVIRONMENT "PYTHONPATH=${PROJECT_SOURCE_DIR}/python;PYTHONDONTWRITEBYTECODE=1"
    LABELS unit TIMEOUT 300)
else()
  add_test(NAME python.worker_unit COMMAND sh -c "echo 'no Python interpreter with numpy: skipped'; exit 77")
  set_tests_properties(python.worker_unit PROPERTIES SKIP_RETURN_CODE 77 LABELS unit)
endif()
