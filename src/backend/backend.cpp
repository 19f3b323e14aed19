// kloop backend: the interface's defaults and the table (see backend.hpp).
#include "backend/backend.hpp"

#include "backend/blackbox/blackbox_backend.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cuda/cuda_backend.hpp"
#include "backend/python/python_backend.hpp"
#include "backend/python/python_package_dir.hpp"
#include "platform/paths.hpp"

namespace kloop::backend {

void op_backend::require_support(const spec::op_spec& spec) const {
    require_backend_support(spec, built_in());
}

std::vector<std::filesystem::path> op_include_dirs(const spec::op_spec& spec) {
    std::vector<std::filesystem::path> dirs;
    for (const auto& d : spec.build.include_dirs) dirs.push_back(python::resolve_include_dir(spec, d));
    return dirs;
}

std::vector<std::filesystem::path> op_backend::header_dirs(const spec::op_spec& spec) const {
    auto dirs = op_include_dirs(spec);
    dirs.push_back(platform::abi_include_dir());
    return dirs;
}

std::vector<eval::integrity_check> op_backend::run_checks(const std::vector<const std::vector<runner::event>*>&) const {
    return {};
}

std::string op_backend::profile_unavailable(const spec::op_spec& spec) const {
    return "profiling needs a CUDA candidate (this op's backend is " + spec::to_string(spec.backend) + ")";
}

const op_backend& backend_for(spec::backend_kind language) {
    switch (language) {
        case spec::backend_kind::cuda: return cuda::cuda_backend();
        case spec::backend_kind::python: return python::python_backend();
        case spec::backend_kind::cpu: break;
    }
    return cpu::cpu_backend();
}

const op_backend& backend_for(const spec::op_spec& spec) {
    if (spec.blackbox) return blackbox::blackbox_backend();
    return backend_for(spec.backend);
}

}  // namespace kloop::backend
