// kloop runner: the job the orchestrator hands to a runner process, and its JSON form.
//
// Responsibility: the fully resolved description of one runner invocation — which libraries to
// load, which calls (mode × shape with concrete tensor shapes, inits, params, tolerances) to
// make, the gate cases (call × trial × seed) and the bench items. The orchestrator builds it
// from the spec (eval/plan_builder), writes it as JSON, and the runner executes it without
// reading op.toml. Versioned: a runner refuses a job whose schema_version it does not know.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/dtype.hpp"
#include "measure/early_verdict.hpp"
#include "measure/stopping_rule.hpp"
#include "measure/timer_agreement.hpp"
#include "spec/op_spec.hpp"

namespace kloop::runner {

inline constexpr int job_schema_version = 1;

struct tensor_plan {
    std::string name;
    kloop::dtype type = kloop::dtype::f32;
    std::vector<std::int64_t> shape;
    std::string init;              // initializer text (inputs); parsed by the runner
    bool inout = false;
    spec::tolerance tol;           // outputs

    [[nodiscard]] std::int64_t numel() const;
};

// One (mode, shape) call with everything resolved.
struct call_plan {
    std::string mode;
    std::string shape;
    std::string entry;
    std::string reference_entry;
    spec::dim_env dims;
    std::vector<tensor_plan> inputs;
    std::vector<tensor_plan> outputs;
    std::vector<spec::param_spec> params;

    [[nodiscard]] std::string get_label() const { return mode + "/" + shape; }
};

struct gate_case {
    int id = 0;
    int call = 0;                  // index into job::calls
    int trial = 0;
    std::uint64_t seed = 0;
};

struct bench_item {
    int id = 0;
    int call = 0;
    std::uint64_t seed = 0;
    int input_sets = 2;            // rotated between samples (each set has its own addresses)
    std::uint64_t flush_bytes = 0; // written between samples, on top of the rotation, to evict caches
    // Which timed calls are checked (drawn in the checker after the call, runner/call_checks.hpp):
    // sample s with probability min(1/check_every, tail_checks/(s + 1)) — 1/check_every for the
    // first check_every × tail_checks samples, then about tail_checks more per e-fold of the
    // sample count, spread over the whole run with no cap to count down to — plus the final check
    // after the last sample. check_every 0 turns timed checks off.
    int check_every = 8;
    int tail_checks = 4;

    // Input elements given fresh values before every bench call (call_buffers::perturb_inputs).
    int perturb_elements = 8;
    int warmup_min_calls = 3;
    double warmup_min_s = 0.05;
    measure::stopping_config stop;
    // Where the candidate's calls are timed by a second clock (a candidate host), no cap ends the
    // series (or an A/B side) before this many samples: the timer cross-check's floor
    // (measure::k_timer_min_windows).
    int timer_min_windows = static_cast<int>(measure::k_timer_min_windows);
    // ab phase: the shape stops once its verdict is settled (measure/early_verdict.hpp); in the
    // job only when enabled ("early_verdict"), so older jobs and other phases read as off.
    measure::early_verdict_config early_verdict;
};

// gate: gate cases; bench: bench items, candidate alone; ab: bench items, base_lib and
// candidate_lib timed interleaved on the same input sets (runner/ab_phase.hpp); profile: the
// first bench item's call, warmed up, then made exactly once inside a profiler range (no
// reference, no checks, no flush in the range) for Nsight Compute (eval/profile_capture.hpp).
enum class job_phase { gate, bench, ab, profile };
[[nodiscard]] std::string to_string(job_phase p);
// "gate" | "bench" | "ab" | "profile"; throws std::runtime_error otherwise.
[[nodiscard]] job_phase job_phase_from_string(const std::string& s);

struct job {
    int schema_version = job_schema_version;
    job_phase phase = job_phase::gate;
    std::string candidate_lib;
    std::string reference_lib;
    std::string base_lib;                  // ab phase: the second library (same entry symbols, candidate's device)
    // The libraries' SHA-256 as built (backend/build_cache); the runner loads a sealed copy only
    // when its hash matches. Empty: not checked (Python manifests).
    std::string candidate_sha256;
    std::string reference_sha256;
    std::string base_sha256;
    std::string candidate_device = "cpu";  // "cpu" | "cuda": which executor runs each library
    std::string reference_device = "cpu";
    std::vector<call_plan> calls;
    std::vector<gate_case> gate;
    std::vector<bench_item> bench;
    std::uint64_t evict_bytes = 0; // cold traffic wanted between two uses of one input set (2 x LLC)
};

void to_json(nlohmann::json& j, const job& x);
void from_json(const nlohmann::json& j, job& x);  // throws std::runtime_error on a bad job

// An enabled early verdict as a job item carries it: {min_effect, confidence, first_look,
// max_looks, min_time_s} (also what a two-sided black-box bench reads, KLOOP_BENCH_EARLY_VERDICT).
[[nodiscard]] nlohmann::json early_verdict_json(const measure::early_verdict_config& e);

}  // namespace kloop::runner
