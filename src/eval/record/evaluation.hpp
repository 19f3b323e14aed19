// kloop eval/record: the in-memory result of evaluating one candidate (build, gate, bench).
//
// Responsibility: the one result model every printer formats (report/) and the loop records.
// A candidate's fate is data here — disposition plus a reason — never an exception.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/record/repository_run.hpp"
#include "check/census_rules.hpp"
#include "check/comparison.hpp"
#include "measure/sample_warnings.hpp"
#include "measure/statistics.hpp"
#include "platform/host_load.hpp"

namespace kloop::eval {

// CUTLASS-style disposition of a whole evaluation.
enum class disposition { passed, gate_failed, build_failed };
[[nodiscard]] std::string to_string(disposition d);

enum class check_status { pass, warn, fail, skipped };
[[nodiscard]] std::string to_string(check_status s);

// One named integrity check ("poison_and_red_zones", "inputs_unchanged", ...).
struct integrity_check {
    std::string name;
    check_status status = check_status::skipped;
    std::string detail;
};

struct output_report {
    std::string name;
    check::compare_metrics metrics;
    bool pass = false;
    std::string reason;
};

struct case_report {
    int id = 0;
    std::string mode;
    std::string shape;
    int trial = 0;
    std::uint64_t seed = 0;
    bool pass = false;
    std::string reason;                    // first failure, human readable; empty on pass
    std::vector<output_report> outputs;
    std::optional<bool> deterministic;     // trial 0, and a plan's first call (Python worker)
    double call_s = 0;                     // the checked call's wall time (JIT and autotuning in a first call)
    double candidate_s = 0;                // every candidate call of the case (rechecks, re-runs)
};

// A held-out call the gate drew (spec/held_out): its dims and params, so a reviewer sees what
// was tried; reproducible from the drawn seed.
struct held_out_param {
    std::string name;
    double value = 0.0;
    bool is_integer = false;
};
struct held_out_call {
    std::string mode;
    std::string shape;                     // "heldout_1", ...
    std::vector<std::pair<std::string, std::int64_t>> dims;
    std::vector<held_out_param> params;
};

struct gate_report {
    bool pass = false;
    bool partial = false;                  // --gate-k was used: never promotable
    std::string gate_k;
    std::vector<std::uint64_t> seeds;
    std::vector<case_report> cases;
    std::vector<held_out_call> held_out;   // the held-out shapes and params drawn for this gate
    std::string runner_failure;            // crash / timeout / fatal of the runner process, if any
    double wall_s = 0;                     // the gate runner's wall time, start to exit
};

struct bench_shape_report {
    std::string mode;
    std::string shape;
    bool ok = false;
    std::string error;
    std::vector<double> samples_s;
    std::optional<measure::sample_summary> stats_s;  // seconds
    std::string stop_reason;
    int warmup_calls = 0;
    int input_sets = 0;
    std::uint64_t flush_bytes = 0;
    int checks_total = 0;
    int checks_failed = 0;
    std::string first_check_failure;
    std::optional<double> flops;           // from the spec's cost formulas
    std::optional<double> bytes;
    // CUDA: kernels under ~20 µs are also replayed as a CUDA graph of calls rotating the input
    // sets (launch overhead amortised; L2 not flushed between calls).
    std::optional<double> graph_replay_s_per_call;
    std::string graph_replay_error;
    int discarded_samples = 0;             // taken below 75 % of the max SM clock, retaken
    std::optional<double> sm_clock_mhz_median;  // over the kept samples (NVML or the probe)
    std::vector<measure::sample_warning> warnings;  // what makes the median weak evidence (never a verdict)
};

struct bench_report {
    bool ran = false;
    bool ok = false;
    std::uint64_t seed = 0;
    std::uint64_t evict_bytes = 0;
    std::vector<bench_shape_report> shapes;
    std::string runner_failure;
    double wall_s = 0;                     // the bench runner's wall time, start to exit
    platform::host_load_report host_load;  // other work on the machine while it timed
    std::vector<measure::sample_warning> warnings;  // of the whole bench ("busy_machine")
};

struct build_summary {
    bool ok = false;
    bool cache_hit = false;
    std::string library;
    std::string library_sha256;            // as built; the runner loads only a copy with this hash
    std::vector<std::string> argv;
    std::string compiler_version;
    std::string diagnostics;
    double wall_s = 0;
    std::string device;                    // where it runs: "cpu" | "cuda"
    std::string target;                    // nvcc builds: "sm_90", "sm_90a"
    nlohmann::json ptxas;                  // nvcc builds: backend/cuda/ptxas_report.hpp's JSON; else null
};

struct environment_info {
    std::string host_cpu;
    unsigned logical_cpus = 0;
    std::uint64_t llc_bytes = 0;
    std::string compiler;
    std::vector<std::string> flags;
    std::string kloop_version;
    std::string kloop_commit;
    bool kloop_dirty = false;
    std::string build_type;
    bool git_available = false;            // the candidate's repository
    std::string git_commit;
    bool git_dirty = false;
};

// The gate's kernel census, kept so a later timing (the A/B of compare and iterate) can hold it
// against its own medians (census_time_vs_event): the checked calls' kernels, without event
// times unless the executor measured one, and the cache flush the device reported per sample.
struct gate_census {
    std::vector<check::census_call> calls;
    std::uint64_t device_flush_bytes = 0;
    double aten_glue_share = 0;  // the spec's [python] aten_glue_share (census_vendor_kernels)
};

struct evaluation {
    std::string op;
    std::string candidate;                 // path as given
    disposition status = disposition::passed;
    std::string reason;                    // why not passed
    build_summary candidate_build;
    build_summary reference_build;
    gate_report gate;
    bench_report bench;
    std::vector<integrity_check> integrity;
    environment_info env;
    std::vector<std::string> command_line;
    // Ops that live in a repository (black-box ops, backend/blackbox): the commands run, their
    // exit status, the parsed pytest summary, the environment. Empty for native ops.
    std::optional<repository_run> repository;
    // The kernels CUPTI saw in the gate's checked calls, per mode (names as CUPTI gives them:
    // mangled for C++), in first-seen order — the kernel filter of `kloop profile`.
    std::map<std::string, std::vector<std::string>> census_kernels;
    gate_census census;                    // empty without a census (CPU, Python, no CUPTI)
    // Where the candidate ran (runner/remote_executor isolation facts): a separate, confined
    // process, or the Python worker's shared one; null when nothing ran. docs/security.md.
    nlohmann::json isolation;
    // Every layer of the confinement held in every runner process of this evaluation.
    [[nodiscard]] bool is_confined() const { return isolation.is_object() && isolation.value("confined", false); }
};

}  // namespace kloop::eval
