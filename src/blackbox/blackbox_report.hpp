// kloop blackbox: printing what a black-box evaluation ran (text and JSON).
//
// Responsibility: the black-box variants of report/evaluation_text and report/evaluation_json.
// report::to_text(evaluation) hands a black-box evaluation to to_text() here; report::to_json
// adds to_json(record) under the key "blackbox". The JSON schema (documented in
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

#include "blackbox/blackbox_record.hpp"
#include "eval/evaluation.hpp"

namespace kloop::blackbox {

[[nodiscard]] nlohmann::json to_json(const blackbox_record& r);

// The console report of a black-box `kloop verify` (e.blackbox must be set).
[[nodiscard]] std::string to_text(const eval::evaluation& e);

}  // namespace kloop::blackbox
