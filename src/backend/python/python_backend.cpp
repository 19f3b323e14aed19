// kloop backend/python: the Python backend (see python_backend.hpp).
#include "backend/python/python_backend.hpp"

#include "backend/python/fork_server.hpp"
#include "backend/python/python_builder.hpp"
#include "backend/python/python_checks.hpp"
#include "backend/python/python_worker.hpp"

namespace kloop::backend::python {

namespace {

class python_backend_impl final : public op_backend {
public:
    [[nodiscard]] std::string_view name() const override { return "python"; }

    [[nodiscard]] source_plan plan(const spec::op_spec&, const std::filesystem::path& source, source_role role) const override {
        return plan_source(spec::backend_kind::python, source, role);
    }

    // A module sees only its own directory and the spec's include_dirs: no C ABI headers.
    [[nodiscard]] std::vector<std::filesystem::path> header_dirs(const spec::op_spec& spec) const override {
        return op_include_dirs(spec);
    }

    [[nodiscard]] build_record build(const build_inputs& in) const override {
        const auto found = in.sources ? *in.sources : find_local_sources(in.source, builder_kind::python, {});
        build_request req;
        req.source = in.source;
        req.sources_sha256 = local_sources_sha256(found);
        req.role = in.role;
        req.spec = &in.spec;
        req.cache_dir = in.cache_dir;
        req.timeout_s = in.timeout_s;
        python_builder builder(in.commands);
        return builder.build(req);
    }

    // Python libraries are manifests; the worker speaks the runner's job and event protocol
    // (python_worker.hpp, docs/python.md).
    void launch(platform::process_request& req, const launch_inputs& in) const override {
        auto py = worker_command_for(in.job.candidate_lib, in.job_path, in.events_path);
        req.argv.insert(req.argv.end(), py.argv.begin(), py.argv.end());
        req.env_overrides = std::move(py.env);
        // [python] device = "cpu": the worker limits itself, and the hosts it forks, at its start.
        if (!py.may_use_torch && in.max_memory_bytes > 0)
            req.env_overrides.emplace_back("KLOOP_MEMORY_LIMIT_BYTES", std::to_string(in.max_memory_bytes));
        if (!in.wrapped) route_through_fork_server(req, py.worker_dir, py.may_use_torch);
    }

    [[nodiscard]] eval::integrity_check artefact_check(const build_record& candidate) const override {
        return source_screen_check(candidate.library);
    }

    [[nodiscard]] std::vector<eval::integrity_check> run_checks(
        const std::vector<const std::vector<runner::event>*>& sessions) const override {
        return {numeric_flags_check(sessions)};
    }

    // Torch tensors on CUDA: the worker flushes 2 x the GPU's L2 per sample.
    [[nodiscard]] bool timed_on_gpu(const eval::build_summary& b) const override {
        return b.target.rfind("torch-cuda", 0) == 0;
    }
};

}  // namespace

const op_backend& python_backend() {
    static const python_backend_impl instance;
    return instance;
}

}  // namespace kloop::backend::python
