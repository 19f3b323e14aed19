// kloop report: printing what an evaluation ran in a repository (a black-box op): text and JSON.
//
// Responsibility: the variants of report/evaluation_text and report/evaluation_json for an
// evaluation that carries a repository_run (eval/record/repository_run.hpp).
// report::to_text(evaluation) hands such an evaluation to repository_run_text() here;
// report::to_json adds repository_run_json(record) under the key "blackbox". The JSON schema (documented in
// docs/blackbox.md, "Record"):
//   blackbox {repo_root, target, placement, copied_files, frozen[], refused_env[],
//             gate[] {argv[], cwd, env {NAME: value}, env_line, started, exit_code, term_signal,
//                     timed_out, timeout_s, wall_s, ended, stdout_tail, stderr_tail, log_stem,
//                     green, partial, gate_k, reason,
//                     summary {found, line, no_tests_ran, passed, failed, errors, skipped, xfailed,
//                              xpassed, deselected, warnings, rerun, other {}, duration_s,
//                              failures[] {kind, node_id, message}, failures_total}},
//             bench[] {side, round, ok, error, + the command fields above}}
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "eval/record/repository_run.hpp"
#include "eval/record/evaluation.hpp"

namespace kloop::report {

[[nodiscard]] nlohmann::json repository_run_json(const eval::repository_run& r);

// The console report of `kloop verify` on a black-box op (e.repository must be set).
[[nodiscard]] std::string repository_run_text(const eval::evaluation& e);

}  // namespace kloop::report
