// kloop report: the record and the text of `kloop noise` (schema kloop.noise).
//
// Responsibility: print a noise measurement — the per-run progress line, the per-shape noise
// floor table and the false-verdict verdict — and write its JSON record. The statistics are
// measure/noise_floor's; the runs are eval/record A/B results.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/record/ab_result.hpp"
#include "eval/record/evaluation_options.hpp"
#include "measure/noise_floor.hpp"
#include "measure/sample_warnings.hpp"
#include "platform/host_load.hpp"

namespace kloop::report {

inline constexpr int noise_schema_version = 1;

struct noise_record {
    std::string op;
    std::string candidate;
    std::vector<std::string> command_line;
    eval::environment_info env;
    std::string load_before, load_after;   // /proc/loadavg's first three fields
    int runs = 0;
    bool ok = false;                       // every run timed every shape
    std::string reason;                    // why the first run that is not ok is not
    measure::ab_config ab;
    measure::stopping_config stop;
    measure::noise_summary summary;
    // The machine's load over every run's timing (platform/host_load), how many runs were busy,
    // and the busy_machine warning when the load was: a noise floor measured then is the load's.
    platform::host_load_report host_load;
    int busy_runs = 0;
    std::vector<measure::sample_warning> warnings;
    // Where each run ran (`--devices`, `--slurm`): "GPU-…", "GPU-… on node7"; empty when unbound.
    std::vector<std::string> run_devices;
    std::string engine = "local";          // "local" | "slurm"
    std::vector<std::string> slurm_jobs;   // the Slurm job ids, with --slurm
};

[[nodiscard]] nlohmann::json to_json(const noise_record& r);
// The record of a noise run that could not be timed at all (a red side).
[[nodiscard]] nlohmann::json noise_not_timed_json(const std::string& reason);

// "kloop noise OP | CAND against itself, N runs" and the order of a run line's shape marks.
[[nodiscard]] std::string noise_header(const std::string& op, const std::string& candidate, int runs,
                                       const eval::ab_evaluation& first);
// "  run   3/10: geomean 1.0012x [0.9981, 1.0040] SAME | per shape = = ?" (+ FASTER, - SLOWER,
// = SAME, ? AMBIGUOUS, x no verdict).
[[nodiscard]] std::string noise_run_line(int index, int runs, const eval::ab_evaluation& r);
// The environment line, the per-shape table and the verdict on the false-verdict rate.
[[nodiscard]] std::string to_text(const noise_record& r);

}  // namespace kloop::report
