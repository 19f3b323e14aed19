// kloop backend/python: the Python backend (see python_backend.hpp).
#include "backend/python/python_backend.hpp"

#include "backend/cpu/cpu_backend.hpp"
#include "backend/cuda/cuda_backend.hpp"
#include "backend/native_runner.hpp"
#include "backend/python/fork_server.hpp"
#include "backend/python/python_builder.hpp"
#include "backend/python/python_checks.hpp"
#include "backend/python/python_worker.hpp"
#include "core/error.hpp"

namespace kloop::backend::python {

namespace {

// A native candidate (.cu, or C++ for the host): built by the CUDA or CPU backend's builder (their
// cache, flags, [build] settings and ptxas report), then "built" as a Python library whose snapshot
// is that shared object. The record is the Python build's (the manifest, the worker's target)
// with the native compile's command, time, warnings and report.
build_record build_native(const build_inputs& in) {
    const bool cuda = plan_source(spec::backend_kind::python, in.source, in.role).builder == builder_kind::nvcc;
    const build_record nat = cuda ? cuda::cuda_backend().build(in) : cpu::cpu_backend().build(in);
    if (!nat.ok) return nat;
    build_request req;
    req.source = in.source;
    req.role = in.role;
    req.spec = &in.spec;
    req.cache_dir = in.cache_dir;
    req.timeout_s = in.timeout_s;
    req.native_library = nat.library;
    python_builder builder(in.commands);
    build_record rec = builder.build(req);
    rec.cache_hit = rec.cache_hit && nat.cache_hit;
    rec.wall_s += nat.wall_s;
    rec.compile_wall_s += nat.compile_wall_s;
    rec.argv = nat.argv;
    rec.compiler = nat.compiler;
    rec.compiler_version = nat.compiler_version + "; " + rec.compiler_version;
    if (!nat.target.empty()) rec.target += "; " + nat.target;  // "torch-cuda; sm_90a": the tensors first
    rec.ptxas = nat.ptxas;
    if (!nat.diagnostics.empty()) rec.diagnostics = nat.diagnostics + (rec.diagnostics.empty() ? "" : "\n" + rec.diagnostics);
    return rec;
}

class python_backend_impl final : public op_backend {
public:
    [[nodiscard]] std::string_view name() const override { return "python"; }

    [[nodiscard]] source_plan plan(const spec::op_spec&, const std::filesystem::path& source, source_role role) const override {
        return plan_source(spec::backend_kind::python, source, role);
    }

    [[nodiscard]] build_record build(const build_inputs& in) const override {
        if (plan(in.spec, in.source, in.role).builder != builder_kind::python) return build_native(in);
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

    // A module's source is screened; a native library's imported symbols are checked as the
    // native backends check theirs.
    [[nodiscard]] eval::integrity_check artefact_check(const build_record& candidate) const override {
        try {
            const auto m = read_manifest(candidate.library);
            if (m.native) return imported_symbols_check(m.snapshot);
        } catch (const usage_error&) {
            // source_screen_check fails it, naming the manifest
        }
        return source_screen_check(candidate.library);
    }

    [[nodiscard]] std::vector<eval::integrity_check> run_checks(
        const std::vector<const std::vector<runner::event>*>& sessions) const override {
        return {numeric_flags_check(sessions)};
    }

    // Nsight Compute profiles the worker itself (a fresh interpreter under ncu, never the fork
    // server: launch() above): its profile phase makes exactly one candidate call inside
    // cudaProfilerStart/Stop, so Triton's kernels, a native candidate's and any ATen glue are
    // captured as a CUDA op's are. Only an op that says it runs on the GPU: with "auto" the worker
    // picks the device at run time, and "cpu" has no kernels to capture.
    [[nodiscard]] std::string profile_unavailable(const spec::op_spec& spec) const override {
        if (spec.python.device == "cuda") return {};
        return "profiling a Python op needs [python] device = \"cuda\" (this op's is \"" + spec.python.device +
               "\": its tensors may live on the host, where Nsight Compute has nothing to capture)";
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
