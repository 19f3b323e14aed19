# CUDA support: KLOOP_ENABLE_CUDA = AUTO (default) | ON | OFF.
#   AUTO  on when find_package(CUDAToolkit) succeeds, else off with a status message;
#   ON    the toolkit is required;
#   OFF   never (kloop then refuses cuda specs with a clear error, exit 2).
# When on: enable_language(CUDA) (CMAKE_CUDA_ARCHITECTURES defaults to 90, the H200), and
# src/backend/cuda builds kloop-runner-cuda and the GPU tests. Only src/backend/cuda has CUDA
# headers and .cu files; the orchestrator never links CUDA.
# Sets KLOOP_CUDA_ENABLED (ON/OFF) for the rest of the build.
set(KLOOP_ENABLE_CUDA AUTO CACHE STRING "Build CUDA support (kloop-runner-cuda): AUTO, ON or OFF")
set_property(CACHE KLOOP_ENABLE_CUDA PROPERTY STRINGS AUTO ON OFF)

set(KLOOP_CUDA_ENABLED OFF)
string(TOUPPER "${KLOOP_ENABLE_CUDA}" _kloop_cuda_mode)
if(_kloop_cuda_mode STREQUAL "AUTO")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(KLOOP_CUDA_ENABLED ON)
  else()
    message(STATUS "kloop: CUDA toolkit not found: building without CUDA support "
                   "(no kloop-runner-cuda; cuda specs will be refused). Set CUDAToolkit_ROOT to use one.")
  endif()
elseif(KLOOP_ENABLE_CUDA)
  find_package(CUDAToolkit REQUIRED)
  set(KLOOP_CUDA_ENABLED ON)
endif()

option(KLOOP_ENABLE_GPU_TESTS "Build the GPU tests (ctest label gpu; they skip without a GPU)" ON)

if(KLOOP_CUDA_ENABLED)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
    set(CMAKE_CUDA_ARCHITECTURES 90 CACHE STRING "CUDA architectures of kloop's own device code")
  endif()
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND CUDAToolkit_NVCC_EXECUTABLE)
    set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}")
  endif()
  enable_language(CUDA)
  message(STATUS "kloop: CUDA support on (CUDA ${CUDAToolkit_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
endif()
