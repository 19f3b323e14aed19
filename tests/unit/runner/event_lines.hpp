// Test helper: runner events written as JSON lines in a test, read the way the orchestrator reads
// them (runner::event_from_json), so that every event a test feeds a check is a valid one.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "runner/events.hpp"

namespace kloop::testing {

// A valid start event (pid, abi, schema_version, phase) with `more` merged in.
inline nlohmann::json start_line(const nlohmann::json& more = nlohmann::json::object()) {
    nlohmann::json j = {{"event", "start"},
                        {"pid", 1},
                        {"abi", 1},
                        {"schema_version", runner::k_events_schema_version},
                        {"phase", "bench"}};
    j.update(more);
    return j;
}

// A bench result's required fields around `more` (samples_s, sample_info, …).
inline nlohmann::json bench_result_line(int id, const nlohmann::json& more) {
    nlohmann::json j = {{"event", "bench_result"}, {"id", id}, {"samples_s", nlohmann::json::array()},
                        {"warmup_calls", 1},        {"stop_reason", "converged"}, {"input_sets", 1},
                        {"flush_bytes", 0}};
    j.update(more);
    return j;
}

inline std::vector<runner::event> typed(const std::vector<nlohmann::json>& lines) {
    std::vector<runner::event> out;
    for (const auto& l : lines) out.push_back(runner::event_from_json(l));
    return out;
}

}  // namespace kloop::testing
