// kloop eval: what a timing's per-sample info says about the device's clocks.
//
// Responsibility: read the executor's per-sample facts (a bench's `sample_info`, an A/B side's
// `base_sample_info` / `candidate_sample_info`: objects with sm_clock_mhz and, where the GPU
// reported clock event reasons other than idle, `reasons`) into the numbers the record keeps and
// the warnings it carries: the median SM clock, and a "clock_events" warning naming the reasons.
// Entries that are not objects, or whose fields have other types, are skipped. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/sample_warnings.hpp"

namespace kloop::eval {

struct sample_clock_facts {
    std::optional<double> sm_clock_mhz_median;  // absent: the executor reported no clock
    int samples_with_events = 0;                // kept samples taken during clock events
    std::vector<std::string> reasons;           // their distinct descriptions, first seen first
};

[[nodiscard]] sample_clock_facts clock_facts_of(const nlohmann::json& sample_info);

// measure::sample_warnings for a timed series, with the "clock_events" warning its sample info
// calls for. Nothing when `samples_s` is empty.
[[nodiscard]] std::vector<measure::sample_warning> timing_warnings(const std::vector<double>& samples_s,
                                                                   const std::string& stop_reason, int discarded,
                                                                   const sample_clock_facts& clocks);

}  // namespace kloop::eval
