// kloop backend: which builder, which device and which runner binary a source file gets.
//
// Responsibility: the one table that maps (the spec's backend, the file's extension, candidate or
// reference) to how it is built and where it runs, so the evaluator never spells it out:
//
//   backend   file                  builder   device   runner
//   cpu       .cpp .cc .cxx .c      c++       cpu      kloop-runner
//   cuda      .cu (candidate, ref)  nvcc      cuda     kloop-runner-cuda
//   cuda      .cpp … (reference)    c++       cpu      kloop-runner-cuda (runs both sides)
//   python    .py (candidate, ref)  python    python   <python> -m kloop_worker (backend/python)
//   python    .cu (candidate)       nvcc      python   the same worker, through the C ABI
//   python    .cpp … (candidate)    c++       python   the same worker, through the C ABI
//
// A python "build" imports the source once in the chosen interpreter (backend/python/
// python_builder); the device "python" means the Python worker runs it, whatever tensors it uses.
// A native candidate of a Python op is compiled as a native op's would be, then loaded by the
// worker (python/kloop_worker/native_library.py) and called on its tensors.
//
// Anything else is a usage error naming the file and the extensions allowed. A cuda spec on a
// kloop built without CUDA is a usage error too (exit 2), saying so. Pure: no I/O.
#pragma once

#include <filesystem>
#include <string>

#include "spec/op_spec.hpp"

namespace kloop::backend {

enum class builder_kind { cpp, nvcc, python };
[[nodiscard]] std::string to_string(builder_kind b);

enum class source_role { candidate, reference };

struct source_plan {
    builder_kind builder = builder_kind::cpp;
    std::string device = "cpu";  // runner::job's candidate_device / reference_device
};

// Throws kloop::usage_error for an extension the backend cannot build.
[[nodiscard]] source_plan plan_source(spec::backend_kind backend, const std::filesystem::path& source,
                                      source_role role);

// "kloop-runner-cuda" when either side runs on "cuda", else "kloop-runner". Jobs on the "python"
// device are run by the Python worker instead (backend/python/python_worker.hpp).
[[nodiscard]] std::string runner_tool_for(const std::string& candidate_device, const std::string& reference_device);

// Throws kloop::usage_error when `backend` needs support this kloop was built without
// (cuda_built_in: backend::cuda::cuda_support_built_in()).
void require_backend_support(const spec::op_spec& s, bool cuda_built_in);

}  // namespace kloop::backend
