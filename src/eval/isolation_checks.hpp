// kloop eval: the integrity checks about where candidate code ran and whose clock it is.
//
// Responsibility: read, from a runner's events, the isolation facts its checker reported
// (runner/remote_executor: a separate process per library, the confinement applied, the timer
// calibration) and the checker's window around every timed call, and turn them into named
// integrity checks:
//   - `isolation`: pass when every runner process ran its candidate in a separate process with
//     every confinement layer applied; warn (marking the result `unconfined`) otherwise — the
//     Python worker shares one process with the reference (docs/security.md); the loop refuses
//     to promote an unconfined result unless `--allow-unconfined`;
//   - `timer_cross_check`: measure/timer_agreement on every timed shape (and each side of an
//     A/B): fail when the candidate's samples claim less time than the checker saw.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/record/evaluation.hpp"
#include "runner/events.hpp"
#include "runner/job.hpp"

namespace kloop::eval {

// The isolation facts of one runner session ({"process": "separate"|"shared", "confined": …}).
[[nodiscard]] nlohmann::json session_isolation(const std::vector<runner::event>& events);
// Two sessions' facts as one: confined only when both were.
[[nodiscard]] nlohmann::json merge_isolation(const nlohmann::json& a, const nlohmann::json& b);

[[nodiscard]] integrity_check isolation_check(const nlohmann::json& isolation);

// `timer_cross_check` over a bench session (bench_result events) or an A/B session (ab_result
// events; the base's host is the second one the checker started). `side`: "candidate" or
// "base" for one side of an A/B, empty for every series.
[[nodiscard]] integrity_check timer_cross_check(const runner::job& job, const std::vector<runner::event>& events,
                                               const std::string& side = {});

}  // namespace kloop::eval
