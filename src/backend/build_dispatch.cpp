// kloop backend: builder / device / runner dispatch (see build_dispatch.hpp).
#include "backend/build_dispatch.hpp"

#include "core/error.hpp"

namespace kloop::backend {

std::string to_string(builder_kind b) {
    switch (b) {
        case builder_kind::nvcc: return "nvcc";
        case builder_kind::python: return "python";
        case builder_kind::cpp: break;
    }
    return "c++";
}

namespace {

bool is_cpp(const std::string& ext) { return ext == ".cpp" || ext == ".cc" || ext == ".cxx" || ext == ".c"; }

}  // namespace

source_plan plan_source(spec::backend_kind backend, const std::filesystem::path& source, source_role role) {
    const auto ext = source.extension().string();
    const char* what = role == source_role::candidate ? "candidate" : "reference";
    if (backend == spec::backend_kind::cuda) {
        if (ext == ".cu") return {builder_kind::nvcc, "cuda"};
        if (role == source_role::reference && is_cpp(ext)) return {builder_kind::cpp, "cpu"};
        throw usage_error(std::string(what) + " '" + source.string() + "': extension '" + ext +
                          "' is not supported by the cuda backend (use .cu" +
                          (role == source_role::reference ? "; a CPU reference may be .cpp, .cc, .cxx or .c)" : ")"));
    }
    if (backend == spec::backend_kind::python) {
        if (ext == ".py") return {builder_kind::python, "python"};
        // A native candidate: built by nvcc or the C++ compiler, called by the Python worker.
        if (role == source_role::candidate && ext == ".cu") return {builder_kind::nvcc, "python"};
        if (role == source_role::candidate && is_cpp(ext)) return {builder_kind::cpp, "python"};
        throw usage_error(std::string(what) + " '" + source.string() + "': extension '" + ext +
                          "' is not supported by the python backend (use .py: a module with the entry functions" +
                          (role == source_role::candidate
                               ? ", or setup() and run_kernel(); or a native library's source: .cu, .cpp, .cc, .cxx, .c"
                               : "") +
                          "; docs/python.md)");
    }
    if (is_cpp(ext)) return {builder_kind::cpp, "cpu"};
    throw usage_error(std::string(what) + " '" + source.string() + "': extension '" + ext +
                      "' is not supported by the " + spec::to_string(backend) +
                      " backend (use .cpp, .cc, .cxx or .c)");
}

std::string runner_tool_for(const std::string& candidate_device, const std::string& reference_device) {
    return candidate_device == "cuda" || reference_device == "cuda" ? "kloop-runner-cuda" : "kloop-runner";
}

void require_backend_support(const spec::op_spec& s, bool cuda_built_in) {
    if (s.backend == spec::backend_kind::cuda && !cuda_built_in)
        throw usage_error("op '" + s.name + "' uses the cuda backend, but this kloop was built without CUDA support\n"
                          "  hint: install the CUDA toolkit and reconfigure (cmake -DKLOOP_ENABLE_CUDA=ON), "
                          "then rebuild kloop and kloop-runner-cuda");
}

}  // namespace kloop::backend
