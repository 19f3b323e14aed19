// kloop loop/record: the record of one iteration (iter_vN/benchmark_result.json, "iteration" key).
//
// Responsibility: what the loop remembers of each version — v0 (the baseline, measured by
// `kloop init` with a plain evaluation) and every `kloop iterate` — and its JSON form. Other
// commands (status, best, report, nogo) read only these records and the contract.
//
// iter_vN/benchmark_result.json (kind "kloop.iteration", schema_version 1):
//   iteration {number, status "baseline"|"positive"|"negative"|"rejected", rejection
//     "none"|"build"|"gate"|"crash"|"timeout"|"integrity"|"bench", reason, candidate_source,
//     candidate_file (inside iter_vN/), candidate_sha256, proposal {direction, expected, tags[],
//     blocked_override}, predictions[] {text, line, kind "speedup"|"no change"|"profile", scope,
//     metric, low, high, outcome "hit"|"miss"|"unscored", measured, off_by, reason}
//     (loop/record/prediction; absent in older records: none),
//     fingerprint, vs_best (the version compared against; -1 for v0), outpaced_by (a positive
//     sibling of `kloop run --parallel` not promoted: the sibling that was; null otherwise),
//     device (the slot its A/B ran on; "" unbound), gate {pass, partial},
//     bench_ok, bench[] {mode, shape, n, median_ms, mean_ms, std_ms, min_ms, max_ms, p10_ms,
//     p90_ms}, ab {shapes[] {mode, shape, ok, error, best {..stats..}, candidate {..}, speedup,
//     ci_low, ci_high, verdict}, overall {speedup, ci_low, ci_high, verdict} | null,
//     min_effect} | null, git {in_repo, committed, commit, note}, profile {status "missing",
//     note, bound, suspect, suspect_reasons[], facts {name: number} (loop/record/profile_facts)},
//     warnings[], recorded_at}
//   evaluation   report::to_json of the candidate's evaluation (v0: build, gate and bench;
//                vN: build and gate, the bench being the A/B below)
//   ab           report::to_json of the A/B (report/ab_json: raw samples, both sides' gates) (vN only)
// profile: the loop's Nsight Compute step (eval/profile_step.hpp): status, note, bound, suspect.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/record/ab_result.hpp"
#include "eval/record/evaluation.hpp"
#include "loop/record/classification.hpp"
#include "loop/record/prediction.hpp"
#include "measure/ab_comparison.hpp"
#include "measure/statistics.hpp"

namespace kloop::loop {

struct shape_stats {
    std::string mode;
    std::string shape;
    measure::sample_summary s;   // seconds
};

struct shape_comparison {
    std::string mode;
    std::string shape;
    bool ok = false;
    std::string error;
    std::optional<measure::sample_summary> best_s;
    std::optional<measure::sample_summary> candidate_s;
    std::optional<measure::ab_result> verdict;
};

struct git_record {
    bool in_repo = false;
    bool committed = false;
    std::string commit;
    std::string note;      // why not committed, or the message
    std::string repair;    // what kloop cleaned up first (an index.lock a killed kloop left), or ""
};

struct iteration_record {
    int number = 0;
    iteration_status status = iteration_status::baseline;
    rejection_kind rejection = rejection_kind::none;
    std::string reason;
    std::string candidate_source;        // as given on the command line
    std::string candidate_file;          // file name inside iter_vN/
    std::string candidate_sha256;
    // The local headers or modules the candidate uses, relative to its directory and copied
    // beside it into iter_vN/ (eval::candidate_sources), and the SHA-256 over the candidate and
    // them: a header-only change makes a different version.
    std::vector<std::string> local_files;
    std::string sources_sha256;
    std::string direction;
    std::string expected;
    std::vector<std::string> tags;
    // The proposal's machine-readable predictions, recorded before the measurement and scored
    // after it (loop/record/prediction).
    std::vector<scored_prediction> predictions;
    // The proposal's written reason to retry a blocked strategy ("" when it gives none).
    std::string blocked_override;
    std::string fingerprint;
    int vs_best = -1;
    // A positive iteration of a `kloop run --parallel` round whose sibling, raced against the same
    // best in the same round, showed the larger speedup: that sibling's number. The iteration
    // stays positive (its change helped) but is not eligible as the best (loop/ranking).
    std::optional<int> outpaced_by;
    // The device slot its A/B ran on when evaluations were spread over devices (`--devices`):
    // the GPU's UUID or index; "" when unbound.
    std::string device;
    bool gate_pass = false;
    bool gate_partial = false;
    bool bench_ok = false;
    std::vector<shape_stats> bench;      // the candidate's own numbers
    std::vector<shape_comparison> ab;    // empty for v0 and for versions rejected before timing
    std::optional<measure::ab_result> overall;
    double min_effect = 0;
    git_record git;
    // "full" | "targeted" | "unavailable" | "failed" | "missing" (not attempted: --no-profile) |
    // "n/a" (not a CUDA op); see eval/profile_step.hpp.
    std::string profile_status = "missing";
    std::string profile_note = "not profiled";
    std::string profile_bound;           // "memory-bound", … of the dominant kernel; "" if none
    bool suspect = false;                // the profile cannot explain the time: never promoted
    std::vector<std::string> suspect_reasons;
    std::map<std::string, double> profile_facts;  // the headline capture's facts (loop/record/profile_facts)
    std::vector<std::string> warnings;
    std::string recorded_at;
};

[[nodiscard]] nlohmann::json to_json(const iteration_record& r);
[[nodiscard]] iteration_record iteration_record_from_json(const nlohmann::json& j);

// The bench numbers of a plain evaluation (v0).
[[nodiscard]] std::vector<shape_stats> bench_stats_of(const eval::evaluation& e);
// Per-shape comparisons of an A/B; `candidate_bench` gets the candidate side's numbers.
[[nodiscard]] std::vector<shape_comparison> comparisons_of(const eval::ab_evaluation& ab);
[[nodiscard]] std::vector<shape_stats> candidate_stats_of(const eval::ab_evaluation& ab);

// Equal-weight geometric mean over the bench shapes of the median (or mean); nullopt when the
// bench is not ok or empty.
[[nodiscard]] std::optional<double> geomean_median_s(const iteration_record& r);
[[nodiscard]] std::optional<double> geomean_mean_s(const iteration_record& r);

// "v3"
[[nodiscard]] std::string version_label(int n);

// The git commit message of an iteration: "kloop <op> v<N> (<status and verdict>): <direction>".
[[nodiscard]] std::string commit_message(const std::string& op, const iteration_record& r);

}  // namespace kloop::loop
