// kloop runner (internal): the checked call and its raw facts, shared by the runner's phases.
//
// Responsibility: what the gate (runner.cpp), the bench (runner.cpp) and the A/B phase
// (ab_phase.cpp) do the same way — run a call on one executor and bring its buffers back to the
// host, run the reference on the same input values, and report the raw facts of a checked call
// (return codes, changed inputs, red-zone damage, per-output comparison metrics) as the JSON the
// orchestrator judges (eval/call_judgement). Internal to src/runner: not part of the job format.
#pragma once

#include <functional>

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/rng.hpp"
#include "runner/call_buffers.hpp"
#include "runner/executor.hpp"
#include "runner/job.hpp"

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

// What happens before every call a candidate sees in the bench and A/B loops, and which timed
// calls are checked (docs/measurement.md, "Every call alike"):
//   - inout inputs get their remembered values back (the previous call may have changed them);
//   - a few scattered input elements get fresh values (call_buffers::perturb_inputs), so no two
//     calls see the same input bytes;
//   - outputs are poisoned and red zones rewritten (call_buffers::prepare_call).
// A call that is flushed for gets its flush after the poison and before the fresh input elements:
// a thread of the candidate that computes the coming call's outputs while its process flushes
// the caches computes them from inputs that are not yet the call's (docs/security.md).
// draw_checked(s) is a Bernoulli draw for timed sample s (0-based, per side) with probability
// min(1/check_every, tail_checks/(s + 1)) (bench_item) from a generator seeded with the bench
// item's seed: it runs in the checker, which the candidate's process cannot read, after the
// call has returned — nothing before a call depends on it. Past the first check_every ×
// tail_checks samples the checks thin out as 1/s but never stop: a candidate that cheats only
// after many calls meets about tail_checks × ln(n/m) checks between samples m and n, and there
// is no cap whose exhaustion it could wait for.
class call_preparation {
public:
    call_preparation(const bench_item& b, const call_plan& plan);
    // `flush` (may be empty): the cache flush of a timed call, made between the two steps.
    void before_call(call_buffers& set, const std::function<void()>& flush = {});
    [[nodiscard]] bool draw_checked(std::size_t sample);

private:
    std::uint64_t m_seed;
    std::uint64_t m_calls = 0;
    rng m_draw;
    int m_check_every;
    int m_tail_checks;
    int m_perturb;
    bool m_has_inout = false;
};

// After an unchecked call: its red zones (and inputs, where reading them back is cheap) —
// null when intact, else facts marked "guard_only" for the orchestrator's judgement.
[[nodiscard]] nlohmann::json guard_facts(const call_outcome& out, call_buffers& set);

// After a checked call: outputs back to the host, the reference on the same input values, and
// the call's raw facts.
[[nodiscard]] nlohmann::json checked_facts(const call_outcome& out, call_buffers& set, call_buffers& ref,
                                           const executors& ex, entry_fn reference);

// Runs `f` on `buf`'s device and brings the results back to the host copy.
call_outcome run_checked(executor_base& exec, entry_fn f, call_buffers& buf);

// The reference on `ref` with `ref`'s current inputs; returns its return code (or -1 on a device error).
int run_reference(executor_base& exec, entry_fn f, call_buffers& ref);

}  // namespace kloop::runner
