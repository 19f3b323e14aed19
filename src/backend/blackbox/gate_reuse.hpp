// kloop backend/blackbox: a green gate reused when everything it depended on is byte-identical.
//
// Responsibility: a black-box gate costs tens of seconds to minutes (FLA's pytest files), and in
// a loop the base's gate would run again every iteration on the very bytes that passed it when
// they were the candidate. A green gate is stored under a key that covers everything the run
// depended on that kloop can see — the digest of the repository copy with the candidate placed
// (every file's content, repo_copy's tree_digest), the argv, the working directory, the whole
// clean environment, the interpreter's version line and the timeout — and reused only for a
// side the caller marks (the base of an iteration), only when green, never for a partial run
// (--gate-k). A reused gate says so in the record (`gate_reused`: the key, when it ran, how long
// it took). What the key cannot see: packages changed in place under an unchanged environment
// and interpreter version (pip install of the same Python); the GPU's state. docs/blackbox.md,
// "Reusing the base's gate".
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "backend/blackbox/gate_env.hpp"
#include "eval/record/repository_run.hpp"

namespace kloop::backend::blackbox {

struct gate_inputs {
    std::string tree;                       // tree_digest of the copy with the candidate placed
    std::vector<std::string> argv;
    std::string cwd;
    env_list env;                           // the child's whole environment
    std::string interpreter;                // "python3 (Python 3.11.2)"
    double timeout_s = 0;
};

// SHA-256 (hex) over every field of `in`, each length-prefixed.
[[nodiscard]] std::string gate_key(const gate_inputs& in);

// Stores a green, full gate under `dir`/<key>.json (atomic write). A red or partial gate is
// never stored (std::logic_error).
void store_green_gate(const std::filesystem::path& dir, const std::string& key, const eval::repository_gate_run& gate);

// The stored gate for `key`, rebuilt as a green run with `reused` filled and wall_s 0, or
// nothing (no entry, or an entry that does not parse, is not green or names another key).
[[nodiscard]] std::optional<eval::repository_gate_run> load_green_gate(const std::filesystem::path& dir, const std::string& key);

}  // namespace kloop::backend::blackbox
