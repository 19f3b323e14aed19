# Python for kloop's Python-backend tests (python/kloop_worker, docs/python.md).
#
# kloop itself finds its interpreter at run time ($KLOOP_PYTHON, [python] interpreter, python3);
# this file only picks the one the tests pass to it: the first of
#   $KLOOP_TEST_PYTHON (environment) or -DKLOOP_TEST_PYTHON=... (cache),
#   /usr/bin/python3,
#   python3 on PATH
# that imports numpy (the worker's one requirement). The first python3 on PATH is not always the
# one with numpy (a pyenv shim, a bare venv), hence the order.
#
# Sets KLOOP_TEST_PYTHON_EXECUTABLE (empty when none imports numpy: the Python tests then exit
# 77, which ctest reports as skipped) and KLOOP_TEST_PYTHON_VERSION.
set(KLOOP_TEST_PYTHON "" CACHE STRING "Python interpreter for the Python-backend tests (must import numpy)")

function(_kloop_python_imports_numpy exe out_ok out_version)
  execute_process(
    COMMAND "${exe}" -c "import sys, numpy; print('%d.%d.%d numpy %s' % (sys.version_info[:3] + (numpy.__version__,)))"
    RESULT_VARIABLE rc OUTPUT_VARIABLE ver ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE TIMEOUT 60)
  if(rc EQUAL 0)
    set(${out_ok} TRUE PARENT_SCOPE)
    set(${out_version} "${ver}" PARENT_SCOPE)
  else()
    set(${out_ok} FALSE PARENT_SCOPE)
  endif()
endfunction()

set(_kloop_py_candidates)
if(DEFINED ENV{KLOOP_TEST_PYTHON} AND NOT "$ENV{KLOOP_TEST_PYTHON}" STREQUAL "")
  list(APPEND _kloop_py_candidates "$ENV{KLOOP_TEST_PYTHON}")
endif()
if(KLOOP_TEST_PYTHON)
  list(APPEND _kloop_py_candidates "${KLOOP_TEST_PYTHON}")
endif()
list(APPEND _kloop_py_candidates /usr/bin/python3)
find_program(_kloop_python3_on_path NAMES python3 NO_CACHE)
if(_kloop_python3_on_path)
  list(APPEND _kloop_py_candidates "${_kloop_python3_on_path}")
endif()

set(KLOOP_TEST_PYTHON_EXECUTABLE "")
set(KLOOP_TEST_PYTHON_VERSION "")
foreach(_py IN LISTS _kloop_py_candidates)
  if(NOT EXISTS "${_py}")
    find_program(_kloop_py_resolved NAMES "${_py}" NO_CACHE)
    if(NOT _kloop_py_resolved)
      continue()
    endif()
    set(_py "${_kloop_py_resolved}")
    unset(_kloop_py_resolved)
  endif()
  _kloop_python_imports_numpy("${_py}" _ok _ver)
  if(_ok)
    set(KLOOP_TEST_PYTHON_EXECUTABLE "${_py}")
    set(KLOOP_TEST_PYTHON_VERSION "${_ver}")
    break()
  endif()
endforeach()

if(KLOOP_TEST_PYTHON_EXECUTABLE)
  message(STATUS "kloop: Python-backend tests use ${KLOOP_TEST_PYTHON_EXECUTABLE} (Python ${KLOOP_TEST_PYTHON_VERSION})")
else()
  message(STATUS "kloop: no Python interpreter with numpy among [${_kloop_py_candidates}]: the Python-backend "
                 "tests will be skipped (set KLOOP_TEST_PYTHON to one)")
endif()
