// kloop backend/cpu: the CPU backend (see cpu_backend.hpp).
#include "backend/cpu/cpu_backend.hpp"

#include "backend/cpu/cpu_builder.hpp"
#include "backend/native_runner.hpp"
#include "platform/paths.hpp"

namespace kloop::backend::cpu {

namespace {

class cpu_backend_impl final : public native_backend {
public:
    [[nodiscard]] std::string_view name() const override { return "cpu"; }

    [[nodiscard]] source_plan plan(const spec::op_spec&, const std::filesystem::path& source, source_role role) const override {
        return plan_source(spec::backend_kind::cpu, source, role);
    }

    [[nodiscard]] build_record build(const build_inputs& in) const override {
        build_request req;
        req.source = in.source;
        req.flags = in.spec.build.flags;
        req.include_dirs = op_include_dirs(in.spec);
        req.abi_include_dir = platform::abi_include_dir();
        req.cache_dir = in.cache_dir;
        req.timeout_s = in.timeout_s;
        cpu_builder builder(in.commands);
        return builder.build(req);
    }

    [[nodiscard]] bool timed_on_gpu(const eval::build_summary&) const override { return false; }
};

}  // namespace

const op_backend& cpu_backend() {
    static const cpu_backend_impl instance;
    return instance;
}

}  // namespace kloop::backend::cpu
