// kloop eval: the integrity checks that look at which kernels the candidate ran rather than at one
// call's numbers (`census_kernel_launched`, `census_vendor_kernels`, `census_kernel_set_stable`,
// `census_time_vs_event`). What its artefact imports is the backend's check (backend.hpp).
//
// Responsibility: turn the census JSON the runner attached to each checked call (call facts'
// "census", backend/cuda/kernel_census) into named integrity_check entries. The rules themselves live in src/check (host-only, tested in CI);
// this file only gathers their inputs from the build record and the runner's events.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/record/evaluation.hpp"
#include "runner/events.hpp"
#include "runner/job.hpp"

namespace kloop::eval {

// The gate's census (evaluation.hpp), gathered from its case_result events.
[[nodiscard]] gate_census gather_gate_census(const runner::job& gate_job, const std::vector<runner::event>& gate_events);

// Event times to hold the census against, per "mode/shape": each timed shape's median when its
// spec bytes exceed the cache flush (so a warm gate call and a cold timed sample see the same
// memory traffic). `flush_bytes` per shape, else `evict_bytes`, else the device's, else 256 MiB.
struct timed_shape {
    std::string key;                       // "mode/shape"
    double median_s = 0;
    std::optional<double> bytes;           // the spec's
    std::uint64_t flush_bytes = 0;
};
[[nodiscard]] std::map<std::string, double> event_proxies(const std::vector<timed_shape>& shapes,
                                                          std::uint64_t evict_bytes, std::uint64_t device_flush_bytes);

// The four census checks of a gathered census, with `proxies` as the event time of calls the
// executor did not time.
[[nodiscard]] std::vector<integrity_check> judge_gate_census(const gate_census& census,
                                                             const std::map<std::string, double>& proxies);

// The four census checks of a gathered census against a bench: a call's event time comes from
// its census ("event_s") when the executor measured one, else from the bench median of the same
// mode and shape (event_proxies).
[[nodiscard]] std::vector<integrity_check> census_checks(const gate_census& census, const bench_report& bench);

// The kernel names CUPTI saw in the gate's checked calls, per mode (the union over its gate
// shapes), in first-seen order; a mode without a census is absent.
[[nodiscard]] std::map<std::string, std::vector<std::string>> census_kernel_names(
    const runner::job& gate_job, const std::vector<runner::event>& gate_events);

}  // namespace kloop::eval
