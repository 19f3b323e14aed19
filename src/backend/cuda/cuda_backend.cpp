// kloop backend/cuda: the CUDA backend (see cuda_backend.hpp).
#include "backend/cuda/cuda_backend.hpp"

#include <algorithm>

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cuda/nvcc_builder.hpp"
#include "backend/native_runner.hpp"
#include "core/error.hpp"
#include "platform/paths.hpp"

namespace kloop::backend::cuda {

int target_compute_capability() {
    std::string v = getenv_string("KLOOP_CUDA_ARCH");
    if (v.rfind("sm_", 0) == 0) v = v.substr(3);
    v.erase(std::remove(v.begin(), v.end(), '.'), v.end());
    if (v.empty()) return 90;
    try {
        std::size_t used = 0;
        const int cc = std::stoi(v, &used);
        if (used == v.size()) return cc;
    } catch (const std::exception&) {
    }
    throw usage_error("KLOOP_CUDA_ARCH '" + v + "': not a compute capability (e.g. 90 or 9.0)");
}

namespace {

class cuda_backend_impl final : public native_backend {
public:
    [[nodiscard]] std::string_view name() const override { return "cuda"; }

    [[nodiscard]] source_plan plan(const spec::op_spec&, const std::filesystem::path& source, source_role role) const override {
        return plan_source(spec::backend_kind::cuda, source, role);
    }

    [[nodiscard]] bool built_in() const override { return cuda_support_built_in(); }

    [[nodiscard]] build_record build(const build_inputs& in) const override {
        if (plan(in.spec, in.source, in.role).builder != builder_kind::nvcc)  // a CPU reference
            return cpu::cpu_backend().build(in);
        nvcc_request req;
        req.source = in.source;
        req.flags = in.spec.build.flags;
        req.include_dirs = op_include_dirs(in.spec);
        req.abi_include_dir = platform::abi_include_dir();
        req.compute_capability = target_compute_capability();
        req.arch_suffix = in.spec.build.arch_suffix;
        req.cache_dir = in.cache_dir;
        req.timeout_s = in.timeout_s;
        nvcc_builder builder(in.commands);
        return builder.build(req);
    }

    [[nodiscard]] bool timed_on_gpu(const eval::build_summary& b) const override { return b.device == "cuda"; }

    [[nodiscard]] std::string profile_unavailable(const spec::op_spec&) const override { return {}; }

    // NVML and the driver are loaded by kloop-runner-cuda, never by kloop (gpu_probe.hpp).
    [[nodiscard]] std::vector<std::string> device_probe_command() const override {
        if (!built_in()) return {};
        return {platform::sibling_tool("kloop-runner-cuda").string(), "--probe-gpus"};
    }
};

}  // namespace

const op_backend& cuda_backend() {
    static const cuda_backend_impl instance;
    return instance;
}

}  // namespace kloop::backend::cuda
