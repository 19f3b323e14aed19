// kloop eval: the verdict on one checked call, from the runner's raw report of it.
//
// Responsibility: turn the raw facts of a checked call (return code, red-zone damage, changed
// inputs, per-output comparison metrics, the reference's own health) into pass/fail with a
// reason a person can act on. Used for gate cases and for the checked samples of the bench, so
// both are judged by exactly the same rules.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "eval/record/evaluation.hpp"
#include "runner/job.hpp"

namespace kloop::eval {

struct call_judgement {
    bool pass = false;
    std::string reason;                    // first failure; empty on pass
    std::vector<output_report> outputs;
    bool red_zone_damage = false;
    bool inputs_changed = false;
    bool unwritten_outputs = false;        // NaN poison left in an output
};

[[nodiscard]] call_judgement judge_call(const runner::call_plan& plan, const nlohmann::json& result);

// Where a timed check happened, for reasons: "timed call 7 (compared with the reference)",
// "warm-up call 2 (red zones and inputs)", "timed call 9 (the final check)".
[[nodiscard]] std::string describe_timed_check(const nlohmann::json& check);

}  // namespace kloop::eval
