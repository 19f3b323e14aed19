// kloop runner: the events a runner writes and the orchestrator reads.
//
// Responsibility: the one definition of the runner → orchestrator channel (one JSON object per
// line, runner/event_writer.hpp). Every kind of event is a struct here, with to_json (what the
// runner writes: runner.cpp, ab_phase.cpp) and event_from_json (what the orchestrator reads:
// eval/runner_session.cpp and every check over a session). The Python worker writes the same
// events; both sides are held to one schema, src/runner/event_schema.json (field names, types,
// which are required), by tests on each side (tests/unit/runner/events_test.cpp,
// python/tests/test_event_schema.py). The start event carries k_events_schema_version; a
// reader refuses another.
//
// What a call did (return code, outputs' metrics, red zones, inputs, census: runner/call_checks)
// is an open record of its own, carried as JSON: `facts` of a case result, the entries of a
// result's `checks`, a sample's `sample_info`, the devices' descriptions.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace kloop::runner {

inline constexpr int k_events_schema_version = 1;

enum class event_kind {
    start,
    case_start,
    stage,
    progress,
    case_result,
    bench_start,
    bench_result,
    ab_start,
    ab_result,
    profile_start,
    profile_result,
    fatal,
    done,
};

[[nodiscard]] std::string to_string(event_kind k);
[[nodiscard]] std::optional<event_kind> event_kind_from_string(std::string_view s);
[[nodiscard]] const std::vector<event_kind>& all_event_kinds();

// A line the reader cannot take: names the kind and the field.
class event_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The first line: which runner, for which phase, on which devices.
struct start_event {
    long pid = 0;
    int abi = 0;                   // the kernel ABI the runner loads (KL_ABI_VERSION)
    int schema_version = k_events_schema_version;
    std::string phase;             // gate, bench, ab, profile
    nlohmann::json reference_device;   // the executors' descriptions (null when absent)
    nlohmann::json candidate_device;   // with "isolation" for hosts kept apart
    nlohmann::json worker;             // the Python worker's facts (numeric flags, versions)
};

// case_start, bench_start, ab_start, profile_start: item `id` begins.
struct item_start_event {
    event_kind kind = event_kind::case_start;
    int id = 0;
};

// Inside an item: which step runs now (what was in flight if the runner dies).
struct stage_event {
    int id = 0;
    std::string stage;
};

// Inside a bench or A/B item, now and then while it times (at most every k_progress_interval_s):
// how far the stopping rule has come. For the live display only: no check or verdict reads it.
struct progress_event {
    int id = 0;
    int samples = 0;               // kept samples so far (A/B: of the side with fewer)
    double time_s = 0;             // their timed total (A/B: both sides)
    std::optional<double> rel_stdev;   // the stopping rule's spread now (A/B: the wider side's)
    std::optional<double> target_rel_stdev;  // the spread it stops at
};

inline constexpr double k_progress_interval_s = 0.5;

// One gate case: the call's facts (runner/call_checks.hpp), and call_s, candidate_s,
// same_address_recheck, deterministic where they were measured.
struct case_result_event {
    int id = 0;
    nlohmann::json facts = nlohmann::json::object();
};

// A call that failed ends a bench, A/B or profile item: where, which call, what it returned.
struct call_failure {
    std::string where;             // "warmup", "sample", "final check", "profiled call"
    int sample = 0;
    int return_code = 0;
    std::string device_error;      // empty when none
    nlohmann::json exception;      // Python: what the call raised, {type, message, where} (null: none)
    std::string side;              // A/B only: "base" or "candidate"
};

// "the candidate returned 3 at sample call 4 (device error: …)"; `who` names the side.
[[nodiscard]] std::string describe_call_failure(std::string_view who, const call_failure& f);

struct bench_result_event {
    int id = 0;
    std::optional<call_failure> failure;
    std::vector<double> samples_s;
    int warmup_calls = 0;
    double warmup_s = 0;
    std::string stop_reason;
    int input_sets = 0;
    std::uint64_t flush_bytes = 0;
    nlohmann::json checks = nlohmann::json::array();        // call facts of the checked calls
    int checked_calls = 0;
    int discarded_samples = 0;
    nlohmann::json sample_info = nlohmann::json::array();   // per kept sample: window_s, clocks…
    // CUDA graph replay of short kernels (absent: not measured).
    std::optional<double> graph_replay_s_per_call;
    std::vector<double> graph_replay_samples_s_per_call;
    std::optional<int> graph_calls, graph_kernel_nodes, graph_replays;
    std::string graph_replay_error;
    nlohmann::json numeric_flags_changed;                   // Python: flags a call changed
};

struct ab_result_event {
    int id = 0;
    std::optional<call_failure> failure;
    std::string order = "ABBA";
    std::vector<double> base_samples_s, candidate_samples_s;
    nlohmann::json base_checks = nlohmann::json::array(), candidate_checks = nlohmann::json::array();
    std::string base_stop_reason, candidate_stop_reason;
    std::string stop;              // what ended the item: both_done, time_cap, early_verdict…
    int base_warmup_calls = 0, candidate_warmup_calls = 0;
    int input_sets = 0;
    std::uint64_t flush_bytes = 0;
    int base_discarded_samples = 0, candidate_discarded_samples = 0;
    std::optional<std::string> early_verdict;
    std::vector<double> base_windows_s, candidate_windows_s;   // the checker's clock per sample
    // Per kept sample, from executors that know the device's clocks (CUDA): sm_clock_mhz, the
    // clock event reasons… as the bench's sample_info. Empty where the executor reports none.
    nlohmann::json base_sample_info = nlohmann::json::array(), candidate_sample_info = nlohmann::json::array();
    std::vector<double> calibration_overheads_s;               // the calibration host, now and then
    std::optional<int> base_checked_calls, candidate_checked_calls;
    nlohmann::json numeric_flags_changed;
};

struct profile_result_event {
    int id = 0;
    std::optional<call_failure> failure;
    double wall_s = 0;
    int warmup_calls = 0;
};

struct fatal_event {
    std::string message;
    bool candidate_died = false;
};

struct done_event {};

using event = std::variant<start_event, item_start_event, stage_event, progress_event, case_result_event,
                           bench_result_event, ab_result_event, profile_result_event, fatal_event, done_event>;

[[nodiscard]] event_kind kind_of(const event& e);
// The item an event belongs to; nullopt for start, fatal and done.
[[nodiscard]] std::optional<int> item_of(const event& e);

[[nodiscard]] nlohmann::json to_json(const event& e);
// Throws event_error naming the kind and the field: not an object, an unknown kind, a required
// field missing, a field of the wrong type, or a start of another schema_version.
[[nodiscard]] event event_from_json(const nlohmann::json& j);

}  // namespace kloop::runner
