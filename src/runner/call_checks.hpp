// kloop runner (internal): the checked call and its raw facts, shared by the runner's phases.
//
// Responsibility: what the gate (runner.cpp), the bench (runner.cpp) and the A/B phase
// (ab_phase.cpp) do the same way — run a call on one executor and bring its buffers back to the
// host, run the reference on the same input values, and report the raw facts of a checked call
// (return codes, changed inputs, red-zone damage, per-output comparison metrics) as the JSON the
// orchestrator judges (eval/call_judgement). Internal to src/runner: not part of the job format.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "runner/call_buffers.hpp"
#include "runner/executor.hpp"

namespace kloop::runner {

// The entry points of one call: the candidate's, the reference's and, in the A/B phase, the
// base's (the second library, same entry symbol as the candidate).
struct entry_pair {
    entry_fn candidate = nullptr;
    entry_fn reference = nullptr;
    entry_fn base = nullptr;
};

// The two executors of a job: the candidate's device and the reference's (a CUDA candidate may
// be checked against a CPU reference). In the A/B phase the base runs on the candidate's.
struct executors {
    executor_base& candidate;
    executor_base& reference;
};

[[nodiscard]] nlohmann::json red_zone_json(const std::vector<red_zone_violation>& v);
[[nodiscard]] nlohmann::json changed_inputs_json(const std::vector<input_change>& v);

// Compare every output of `cand` against `ref` (host copies); also report the reference's own
// non-finite values (a broken reference must not make every candidate look wrong silently).
[[nodiscard]] nlohmann::json compare_json(const call_buffers& cand, const call_buffers& ref);

// The raw facts of one checked candidate call (its buffers already collected to the host).
[[nodiscard]] nlohmann::json call_facts(const call_outcome& out, const call_buffers& cand, const call_buffers& ref,
                                        int ref_rc);

[[nodiscard]] bool outputs_bitwise_equal(const call_buffers& a, const call_buffers& b);

// Runs `f` on `buf`'s device and brings the results back to the host copy.
call_outcome run_checked(executor_base& exec, entry_fn f, call_buffers& buf);

// The reference on `ref` with `ref`'s current inputs; returns its return code (or -1 on a device error).
int run_reference(executor_base& exec, entry_fn f, call_buffers& ref);

}  // namespace kloop::runner
