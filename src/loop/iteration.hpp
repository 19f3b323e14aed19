// kloop loop: `kloop iterate` — one iteration of the protocol.
//
// Responsibility: verify the contract, refuse past the cap, read the proposal and admit it (a
// blocked fingerprint or a proposal without a machine-readable prediction warns, or is refused
// when the request says so: loop/proposal_admission), record its predictions, snapshot the
// candidate, compare it with the current best
// (eval::compare_candidates: both gated, then timed interleaved in one runner), classify,
// score the predictions, commit the candidate in its repository, and write iter_vN/ (candidate copy, proposal,
// benchmark_result.json, iteration_summary.md) in one rename; then the OPT_LOG.md row, the
// strategy memory and run_manifest.json. Order and crash safety:
//   stage the copies → compare → git commit → write the records into the staging directory →
//   rename it to iter_vN (the commit point) → OPT_LOG row → memory → manifest.
// A kill before the rename leaves no iteration (the staging directory is removed by the next
// writer; at worst a commit whose iteration is re-run) — except a kill while the candidate runs
// (the A/B, the profile step): the staging directory then holds an evaluation mark, and the next
// command records the candidate as rejected (loop/evaluation_marker). A kill after the rename
// leaves derived files behind, which the next command repairs (loop/loop_session). Fault points: iterate.staged,
// iterate.compared, iterate.committed, iterate.written, iterate.renamed, iterate.logged,
// iterate.remembered.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/local_sources.hpp"
#include "eval/ab_evaluation.hpp"
#include "eval/record/evaluation_options.hpp"
#include "loop/record/iteration_record.hpp"
#include "loop/version_profile.hpp"
#include "loop/loop_session.hpp"
#include "loop/loop_status.hpp"
#include "loop/workspace.hpp"
#include "measure/ab_comparison.hpp"
#include "platform/subprocess.hpp"
#include "spec/op_spec.hpp"

namespace kloop::loop {

struct iterate_request {
    std::filesystem::path workspace;
    std::optional<std::filesystem::path> candidate;  // default: the contract's kernel file
    std::filesystem::path proposal;
    eval::evaluation_options options;                // the stopping rule and timeouts
    measure::ab_config ab;
    std::vector<std::string> command_line;
    std::filesystem::path memory_db;
    profile_options profile;                         // the profile step (loop/version_profile.hpp)
    // Promote a FASTER candidate whose evaluation was not confined (docs/security.md); without it
    // such an iteration is rejected (integrity), since its numbers are the candidate's to forge.
    bool allow_unconfined = false;
    // Promote a FASTER candidate only when nothing else was runnable while the A/B timed
    // (platform/host_load): a verdict from a busy machine is then rejected (bench), not promoted.
    bool require_quiet = false;
    // Refuse (proposal_refused, before anything is staged) a proposal without a machine-readable
    // prediction; without it such a proposal is measured with a warning (loop/proposal_admission).
    bool require_prediction = false;
    // Refuse a proposal whose strategy fingerprint the memory blocks unless it gives a
    // `Blocked-override:` reason; without it a blocked fingerprint only warns.
    bool enforce_blocked = false;
    // The kernel file a candidate evaluated from a copy is committed as (`kloop run --parallel`
    // evaluates each sibling from its attempt's saved sources): its bytes go into a commit of this
    // path (repo_git: commit_snapshot) and the file itself is left alone. Default: the candidate
    // is committed in place.
    std::optional<std::filesystem::path> commit_as;
    // The workspace lock, when the caller holds it already (`kloop run` keeps it for the whole
    // run, `kloop tune` for its search): the iteration uses it instead of taking its own.
    std::shared_ptr<workspace_lock> held_lock;
};

struct iterate_outcome {
    iteration_record record;
    std::filesystem::path dir;
    loop_status status;
    std::vector<std::string> notes;                  // repairs, git notes
};

[[nodiscard]] iterate_outcome run_iteration(const iterate_request& req, platform::command_runner_base& runner);

// run_iteration in its three steps, for a caller that evaluates several candidates at once
// (`kloop run --parallel`): stage them in turn, evaluate them at once (each with its own
// device-bound runner), record them in turn. The session is opened (write access) by the caller.
struct staged_iteration {
    iteration_record record;                     // numbered and admitted; its verdict after evaluate_staged
    std::filesystem::path staging;               // .staging-vN: the sources and the proposal
    std::filesystem::path candidate;             // the file evaluated
    std::filesystem::path best_source;           // the best version's file it is compared against
    std::shared_ptr<const spec::op_spec> spec;
    backend::local_sources sources;
    std::vector<std::string> notes;
    nlohmann::json evaluation, ab;               // their report JSON, for benchmark_result.json
};

// Reads and admits the proposal (kloop::usage_error when it is refused), numbers the iteration
// `number`, picks the session's current best and stages the candidate's sources.
[[nodiscard]] staged_iteration stage_iteration(loop_session& session, strategy_memory& memory, const iterate_request& req,
                                               int number, platform::command_runner_base& runner);
// The A/B against its best, under the evaluation mark; classification, the profile step, the
// predictions scored. It writes only into its staging directory (and `state_dir`, a black-box
// op's stable repository copies), so siblings may evaluate at once, here or on a Slurm node
// (loop/sibling_slurm). `device`: the slot it runs on, for the record ("" when unbound).
void evaluate_staged(staged_iteration& it, const contract& c, const std::filesystem::path& state_dir,
                     const iterate_request& req, platform::command_runner_base& runner, const std::string& device = "");
// The git commit, the records, the rename to iter_vN (the commit point), the OPT_LOG row, the
// strategy memory and the manifest; appends the record to the session.
[[nodiscard]] iterate_outcome record_staged(loop_session& session, strategy_memory& memory, staged_iteration& it,
                                            const iterate_request& req, platform::command_runner_base& runner);

// kloop::usage_error when the session's iteration cap is reached ("the iteration cap (N) is reached"),
// counting `staged` iterations numbered but not recorded yet (a parallel round's earlier siblings).
void refuse_past_cap(const loop_session& session, int staged = 0);

// The git commit message of an iteration: "kloop <op> v3: negative (SAME x0.998 vs v1)".
[[nodiscard]] std::string commit_message(const std::string& op, const iteration_record& r);

}  // namespace kloop::loop
