// kloop backend: the one interface every backend implements, and the table that picks one.
//
// Responsibility: everything that differs between a CPU, a CUDA, a Python and a black-box op sits
// behind this class, so the pipeline (eval/), the printers (report/) and the loop never name a
// backend and never include one (the build gives them only backend/*.hpp, not the folders below):
//
//   plan          which builder and device a source gets (backend/build_dispatch's table)
//   header_dirs   where a candidate's headers may come from besides its own directory
//   build         a source → the artefact its runner loads, cached; a failed compile is an outcome
//   launch        the process that runs a job: kloop-runner, kloop-runner-cuda, the Python worker
//   artefact_check / run_checks   the backend's own integrity checks (what the candidate imports;
//                 what its calls left behind), appended to the pipeline's
//   timed_on_gpu  whether its timing flushes the GPU's L2 (the runner's size) or the host's LLC
//   profile_unavailable  why Nsight Compute cannot profile it ("" when it can)
//   device_probe_command the child that reports the machine's devices to preflight
//   own_pipeline  a backend that evaluates on its own terms (a repository's commands) returns its
//                 pipeline; the others leave kloop's build → gate → bench to eval/evaluator.
//
// The table (backend_for) maps the spec to one of four static instances: cpu, cuda, python (by
// [op] backend) and blackbox (by [op] mode = "blackbox", whatever the backend). They hold no
// state; every call gets what it needs.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/build_cache.hpp"
#include "backend/build_dispatch.hpp"
#include "backend/local_sources.hpp"
#include "eval/record/ab_result.hpp"
#include "eval/record/context.hpp"
#include "eval/record/evaluation.hpp"
#include "platform/subprocess.hpp"
#include "runner/events.hpp"
#include "runner/job.hpp"
#include "spec/op_spec.hpp"

namespace kloop::backend {

// What every build gets.
struct build_inputs {
    const spec::op_spec& spec;
    std::filesystem::path source;
    source_role role = source_role::candidate;
    const local_sources* sources = nullptr;  // the candidate's files; null: the builder finds a reference's own
    std::filesystem::path cache_dir;         // empty: platform::cache_dir()
    double timeout_s = 300;
    platform::command_runner_base& commands;
};

// What the launch of one runner process knows: the job, its files, and the limits.
struct launch_inputs {
    const runner::job& job;
    std::filesystem::path job_path;
    std::filesystem::path events_path;
    bool wrapped = false;                    // a wrapper (ncu) runs in front of the runner
    std::size_t max_memory_bytes = 0;        // 0: no cap
};

// A backend's own evaluation, in place of kloop's build → runner → judge pipeline.
class pipeline {
public:
    virtual ~pipeline() = default;
    [[nodiscard]] virtual eval::evaluation evaluate(const eval::evaluation_context& ctx) const = 0;
    [[nodiscard]] virtual eval::ab_evaluation compare(const eval::ab_context& ctx) const = 0;
    [[nodiscard]] virtual eval::ab_evaluation retime(const eval::ab_context& ctx, const eval::ab_evaluation& gated,
                                                     int run) const = 0;
};

class op_backend {
public:
    op_backend() = default;
    op_backend(const op_backend&) = delete;
    op_backend& operator=(const op_backend&) = delete;
    virtual ~op_backend() = default;

    [[nodiscard]] virtual std::string_view name() const = 0;

    // Non-null: this backend evaluates on its own (the rest of the interface is then unused).
    [[nodiscard]] virtual const pipeline* own_pipeline() const { return nullptr; }

    // Whether this kloop was built with what the backend needs (CUDA for cuda).
    [[nodiscard]] virtual bool built_in() const { return true; }
    // Throws kloop::usage_error, naming the op and the fix, when it was not.
    virtual void require_support(const spec::op_spec& spec) const;

    // Throws kloop::usage_error for a file this backend cannot build.
    [[nodiscard]] virtual source_plan plan(const spec::op_spec& spec, const std::filesystem::path& source, source_role role) const = 0;

    // Where a candidate's headers may come from besides its own directory: the spec's
    // include_dirs, and kloop's ABI headers for native code.
    [[nodiscard]] virtual std::vector<std::filesystem::path> header_dirs(const spec::op_spec& spec) const;

    [[nodiscard]] virtual build_record build(const build_inputs& in) const = 0;

    // Appends the runner's command to req.argv (after any wrapper) and sets its environment and
    // limits.
    virtual void launch(platform::process_request& req, const launch_inputs& in) const = 0;

    // The check of the built candidate itself: `imported_symbols` of a shared object, the
    // source screen of a Python module.
    [[nodiscard]] virtual eval::integrity_check artefact_check(const build_record& candidate) const = 0;

    // Checks over the events of the evaluation's runner sessions (gate, bench); none by default.
    [[nodiscard]] virtual std::vector<eval::integrity_check> run_checks(
        const std::vector<const std::vector<runner::event>*>& sessions) const;

    // Whether a built candidate is timed on a GPU (the flush is then the runner's 2 x L2).
    [[nodiscard]] virtual bool timed_on_gpu(const eval::build_summary& candidate_build) const = 0;

    // The command that reports this machine's devices for preflight (platform/gpu_facts.hpp's
    // JSON on stdout), run as a child; empty when the backend has none.
    [[nodiscard]] virtual std::vector<std::string> device_probe_command() const { return {}; }

    // Why ncu cannot profile this backend's candidates; "" when it can.
    [[nodiscard]] virtual std::string profile_unavailable(const spec::op_spec& spec) const;
};

// The spec's [build] include_dirs in op.toml's order, absolute: a plain one under the op
// directory, a package one where the op's interpreter finds the package (python_package_dir.hpp;
// throws kloop::spec_error naming the entry when it cannot).
[[nodiscard]] std::vector<std::filesystem::path> op_include_dirs(const spec::op_spec& spec);

// The one table. The op's backend: blackbox for [op] mode = "blackbox", else its language's.
[[nodiscard]] const op_backend& backend_for(const spec::op_spec& spec);
// The backend of a language ([op] backend): cpu, cuda or python.
[[nodiscard]] const op_backend& backend_for(spec::backend_kind language);

}  // namespace kloop::backend
