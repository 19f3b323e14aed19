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

#include "backend/build_cache.hpp"
#include "backend/build_dispatch.hpp"
#include "backend/local_sources.hpp"
#include "eval/record/context.hpp"
#include "eval/record/evaluation.hpp"
#include "platform/subprocess.hpp"
#include "spec/op_spec.hpp"

namespace kloop::eval {

[[nodiscard]] evaluation evaluate(const evaluation_context& ctx);

// Builds one source of the run (the reference or the candidate) as evaluate() does: cached, with
// the spec's flags, by the op's backend (backend/backend.hpp). Other steps that run the candidate (profile_capture) use it.
[[nodiscard]] backend::build_record build_run_source(const evaluation_context& ctx, const std::filesystem::path& source,
                                                     backend::source_role role);

// The files the candidate is made of: its source and the local headers or modules it uses
// (backend/local_sources.hpp), with the spec's include_dirs and kloop's ABI headers as the
// places a header may also come from. Throws kloop::usage_error for a header anywhere else.
// Every verb's build checks it; the loop stages, snapshots and commits exactly these files.
[[nodiscard]] backend::local_sources candidate_sources(const spec::op_spec& spec, const std::filesystem::path& candidate);

}  // namespace kloop::eval
