// kloop eval: evaluate one candidate end to end — build, gate, bench — in explicit phases.
//
// Responsibility: the pipeline behind `kloop verify` (and each loop iteration): build the
// reference and the candidate (cached), run the gate in one runner process, judge every case,
// and only on a green gate run the bench in a second runner process and summarise its raw
// samples. Each phase's outcome is recorded; a failing phase ends the evaluation with a
// disposition and a reason. Never throws for anything the candidate does.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "backend/build_dispatch.hpp"
#include "backend/cpu/cpu_builder.hpp"
#include "backend/local_sources.hpp"
#include "eval/evaluation.hpp"
#include "eval/evaluation_options.hpp"
#include "platform/subprocess.hpp"
#include "spec/op_spec.hpp"

namespace kloop::eval {

struct evaluation_context {
    const spec::op_spec& spec;
    std::filesystem::path candidate;       // source file
    evaluation_options options;
    platform::command_runner_base& commands;
    std::filesystem::path cache_dir;       // build cache
    std::filesystem::path scratch_dir;     // where jobs, events and runner logs go
};

[[nodiscard]] evaluation evaluate(const evaluation_context& ctx);

// Whether a built candidate is timed on a GPU: a CUDA library, or a Python candidate whose worker
// holds torch tensors on CUDA (target "torch-cuda…"). Its timing then flushes 2 x the GPU's L2
// per sample (the runner's or the worker's own size), not 2 x the host's last-level cache.
[[nodiscard]] bool timed_on_gpu(const build_summary& candidate_build);

// Builds one source of the run (the reference or the candidate) as evaluate() does: cached, with
// the spec's flags; nvcc for .cu. Other steps that run the candidate (profile_capture) use it.
[[nodiscard]] backend::cpu::build_record build_run_source(const evaluation_context& ctx, const std::filesystem::path& source,
                                                          backend::source_role role);

// The files the candidate is made of: its source and the local headers or modules it uses
// (backend/local_sources.hpp), with the spec's include_dirs and kloop's ABI headers as the
// places a header may also come from. Throws kloop::usage_error for a header anywhere else.
// Every verb's build checks it; the loop stages, snapshots and commits exactly these files.
[[nodiscard]] backend::local_sources candidate_sources(const spec::op_spec& spec, const std::filesystem::path& candidate);

// The environment line: host, compiler, kloop build, the candidate's git state.
[[nodiscard]] environment_info collect_environment(const evaluation_context& ctx);

}  // namespace kloop::eval
