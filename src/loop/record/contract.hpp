// kloop loop/record: the frozen contract of one optimisation loop (contract.json).
//
// Responsibility: what `kloop init` freezes and every later command enforces. The contract
// holds the SHA-256 of every frozen file named by the spec (op.toml and the reference at
// least), the op.toml text itself (the only source of shapes and tolerances for the rest of the
// loop: load_spec() parses that copy, never a re-read file), the gate/bench shapes and the
// tolerances in plain form for readers, the seed policy, the iteration cap and the target
// speedup, the baseline's identity, and a hash of all of that (contract_sha256) so an edited
// contract.json is caught too. verify_contract() re-hashes the frozen files and throws
// kloop::contract_error (exit 5) naming the file and both hashes.
//
// contract.json body (schema_version 1, kind "kloop.contract"):
//   run_id, op, backend, device, shape_set, op_dir (absolute), op_dir_rel (from the workspace),
//   spec_file (relative to op_dir), spec_text, frozen[] {path (relative to op_dir), sha256},
//   shapes[] {name, dims {}, gate, bench}, tolerances[] {mode, output, atol?, rtol?, rel_rms?},
//   seed_policy {fixed_seeds[2], drawn_trials, trials}, max_iterations, target_speedup (null),
//   candidate (absolute), candidate_rel (from the workspace), baseline {sha256, git_commit,
//   git_dirty, sources_sha256, local_files[]}, created_at, contract_sha256
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "spec/op_spec.hpp"

namespace kloop::loop {

struct frozen_file {
    std::string path;    // relative to op_dir
    std::string sha256;
};

struct contract_shape {
    std::string name;
    std::map<std::string, std::int64_t> dims;
    bool gate = false;
    bool bench = false;
};

struct contract_tolerance {
    std::string mode;
    std::string output;
    std::optional<double> atol, rtol, rel_rms;
};

struct contract {
    std::string run_id;
    std::string op;
    std::string backend;
    std::string device;
    std::string shape_set;               // hash of the shapes (memory key)
    std::filesystem::path op_dir;        // absolute
    std::string spec_file;               // relative to op_dir
    std::string spec_text;
    std::vector<frozen_file> frozen;
    std::vector<contract_shape> shapes;
    std::vector<contract_tolerance> tolerances;
    std::uint64_t fixed_seeds[2] = {1, 2};
    int trials = 3;
    int max_iterations = 0;
    std::optional<double> target_speedup;
    std::filesystem::path candidate;     // absolute: the kernel file the loop iterates on
    std::string baseline_sha256;
    // The baseline's local headers or modules (relative to the candidate's directory) and the
    // SHA-256 over all its sources (backend::local_sources_sha256): set by `kloop init`.
    std::vector<std::string> baseline_local_files;
    std::string baseline_sources_sha256;
    std::string baseline_git_commit;
    bool baseline_git_dirty = false;
    std::string created_at;
};

struct contract_inputs {
    const spec::op_spec& spec;
    std::filesystem::path candidate;
    int max_iterations = 0;
    std::optional<double> target_speedup;
    std::string device;
    std::string baseline_git_commit;
    bool baseline_git_dirty = false;
};

// Hashes the frozen files now. Throws kloop::usage_error for a cap < 1 or a target <= 1.
[[nodiscard]] contract make_contract(const contract_inputs& in);

// `workspace_root` makes the relative paths. Body only (the caller adds the record header).
[[nodiscard]] nlohmann::json to_json(const contract& c, const std::filesystem::path& workspace_root);
// Throws kloop::contract_error when contract_sha256 does not match the body (hand-edited).
[[nodiscard]] contract contract_from_json(const nlohmann::json& j, const std::filesystem::path& workspace_root);

// Re-hashes every frozen file; throws kloop::contract_error naming the first changed (or
// missing) file with the contract's hash and the current one.
void verify_contract(const contract& c);

// The op spec parsed from the contract's own copy of op.toml (paths resolve against op_dir).
[[nodiscard]] spec::op_spec load_spec(const contract& c);

// The memory key's shape-set id: hash of the sorted shape names, dims and uses.
[[nodiscard]] std::string shape_set_id(const spec::op_spec& spec);

}  // namespace kloop::loop
