// kloop runner: gate and bench phases.
#include "runner/runner.hpp"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "check/comparison.hpp"
#include "core/rng.hpp"
#include "measure/stopping_rule.hpp"
#include "runner/call_buffers.hpp"
#include "runner/loaded_library.hpp"

namespace kloop::runner {

using nlohmann::json;
using clock_type = std::chrono::steady_clock;

namespace {

struct entry_pair {
    entry_fn candidate = nullptr;
    entry_fn reference = nullptr;
};

// The two executors of a job: the candidate's device and the reference's (a CUDA candidate may
// be checked against a CPU reference).
struct executors {
    executor_base& candidate;
    executor_base& reference;
};

json red_zone_json(const std::vector<red_zone_violation>& v) {
    json a = json::array();
    for (const auto& r : v) a.push_back({{"name", r.name}, {"byte_offset", r.byte_offset}});
    return a;
}

json changed_inputs_json(const std::vector<input_change>& v) {
    json a = json::array();
    for (const auto& c : v) a.push_back({{"name", c.name}, {"first_changed", c.first_changed}});
    return a;
}

// Compare every output of `cand` against `ref` (host copies); also report the reference's own
// non-finite values (a broken reference must not make every candidate look wrong silently).
json compare_json(const call_buffers& cand, const call_buffers& ref) {
    json outs = json::array();
    const auto& plan = cand.get_plan();
    for (std::size_t i = 0; i < plan.outputs.size(); ++i) {
        const auto& t = plan.outputs[i];
        const auto m = check::compare_outputs(t.type, cand.get_output(i).data(), ref.get_output(i).data(),
                                              t.numel(), t.tol);
        const auto self = check::compare_outputs(t.type, ref.get_output(i).data(), ref.get_output(i).data(),
                                                 t.numel(), t.tol);
        outs.push_back({{"name", t.name}, {"metrics", m}, {"reference_nonfinite", self.nan_count + self.inf_count}});
    }
    return outs;
}

// The raw facts of one checked candidate call (its buffers already collected to the host).
json call_facts(const call_outcome& out, const call_buffers& cand, const call_buffers& ref, int ref_rc) {
    json j = {{"return_code", out.return_code},
              {"reference_return_code", ref_rc},
              {"changed_inputs", changed_inputs_json(cand.find_changed_inputs())},
              {"red_zone_violations", red_zone_json(cand.find_red_zone_violations())},
              {"outputs", compare_json(cand, ref)}};
    if (!out.device_error.empty()) j["device_error"] = out.device_error;
    return j;
}

bool outputs_bitwise_equal(const call_buffers& a, const call_buffers& b) {
    for (std::size_t i = 0; i < a.get_plan().outputs.size(); ++i)
        if (std::memcmp(a.get_output(i).data(), b.get_output(i).data(), a.get_output(i).bytes()) != 0)
            return false;
    return true;
}

// Runs `f` on `buf`'s device and brings the results back to the host copy.
call_outcome run_checked(executor_base& exec, entry_fn f, call_buffers& buf) {
    buf.prepare();
    const auto out = exec.invoke(f, buf.get_args());
    if (out.device_error.empty()) buf.collect();
    return out;
}

// The reference on `ref` with `ref`'s current inputs; returns its return code (or -1 on a device error).
int run_reference(executor_base& exec, entry_fn f, call_buffers& ref) {
    ref.poison_outputs();
    const auto out = run_checked(exec, f, ref);
    return out.device_error.empty() ? out.return_code : -1;
}

void run_gate_case(const job& j, const gate_case& c, const entry_pair& fns, const executors& ex, event_writer& ev) {
    const auto& plan = j.calls[static_cast<std::size_t>(c.call)];
    ev.write({{"event", "case_start"}, {"id", c.id}});

    call_buffers ref(plan, ex.reference);
    ref.fill_inputs(c.seed);
    ev.write({{"event", "stage"}, {"id", c.id}, {"stage", "reference"}});
    const int ref_rc = run_reference(ex.reference, fns.reference, ref);
    if (ref_rc != 0) {
        ev.write({{"event", "case_result"}, {"id", c.id}, {"reference_return_code", ref_rc}});
        return;
    }

    // Fresh buffers (other addresses) with the same values; outputs poisoned by construction.
    auto cand = std::make_unique<call_buffers>(plan, ex.candidate);
    cand->copy_inputs_from(ref);
    ev.write({{"event", "stage"}, {"id", c.id}, {"stage", "candidate"}});
    const auto t0 = clock_type::now();
    const auto out = run_checked(ex.candidate, fns.candidate, *cand);
    const double call_s = std::chrono::duration<double>(clock_type::now() - t0).count();
    if (!out.device_error.empty()) {
        // A sticky device error poisons the context: report it and stop this runner.
        ev.write({{"event", "case_result"}, {"id", c.id}, {"return_code", out.return_code},
                  {"device_error", out.device_error}});
        throw std::runtime_error("device error in the candidate: " + out.device_error);
    }
    json result = call_facts(out, *cand, ref, 0);
    result["event"] = "case_result";
    result["id"] = c.id;
    result["call_s"] = call_s;

    if (out.ok() && c.trial == 0) {
        // Same addresses, new values, right after the first call: the candidate is called again
        // on the same buffers refilled from another seed. A result cached on pointers (or on
        // anything but the values) comes back stale here, before any timing.
        ev.write({{"event", "stage"}, {"id", c.id}, {"stage", "same_address_recheck"}});
        cand->fill_inputs(derive_seed(c.seed, "same-address"));
        cand->poison_outputs();
        const auto out_same = run_checked(ex.candidate, fns.candidate, *cand);
        ref.copy_inputs_from(*cand);
        const int ref_rc_same = run_reference(ex.reference, fns.reference, ref);
        result["same_address_recheck"] = call_facts(out_same, *cand, ref, ref_rc_same);

        // Determinism: the same values on fresh buffers must give identical bits.
        ev.write({{"event", "stage"}, {"id", c.id}, {"stage", "determinism"}});
        call_buffers again(plan, ex.candidate);
        again.copy_inputs_from(*cand);
        const auto out_again = run_checked(ex.candidate, fns.candidate, again);
        result["deterministic"] = out_same.ok() && out_again.ok() && outputs_bitwise_equal(*cand, again);
    }
    ev.write(result);
}

void run_bench_item(const job& j, const bench_item& b, const entry_pair& fns, const executors& ex, event_writer& ev) {
    const auto& plan = j.calls[static_cast<std::size_t>(b.call)];
    ev.write({{"event", "bench_start"}, {"id", b.id}});

    const int n_sets = std::max(1, b.input_sets);
    std::vector<std::unique_ptr<call_buffers>> sets;
    // Set 0 is drawn from the seed; the others are shifted arrangements of it (memcpy speed);
    // `spare` is the source of the new values given to checked samples.
    call_buffers spare(plan, ex.reference);
    spare.fill_inputs(derive_seed(b.seed, "spare"));
    for (int k = 0; k < n_sets; ++k) {
        sets.push_back(std::make_unique<call_buffers>(plan, ex.candidate));
        if (k == 0) sets.back()->fill_inputs(derive_seed(b.seed, "set0"));
        else sets.back()->fill_inputs_shifted(*sets.front(), derive_seed(b.seed, "set" + std::to_string(k)));
        sets.back()->prepare();
    }
    call_buffers ref(plan, ex.reference);

    auto fail = [&](const char* where, int sample, const call_outcome& out) {
        json e = {{"event", "bench_result"}, {"id", b.id}, {"error", where}, {"sample", sample},
                  {"return_code", out.return_code}};
        if (!out.device_error.empty()) e["device_error"] = out.device_error;
        ev.write(e);
    };

    // Warm-up: page in code and data, let clocks and caches settle.
    int warm = 0;
    double warm_s = 0;
    const auto warm_start = clock_type::now();
    while (warm < b.warmup_min_calls ||
           std::chrono::duration<double>(clock_type::now() - warm_start).count() < b.warmup_min_s) {
        auto& s = *sets[static_cast<std::size_t>(warm % n_sets)];
        call_outcome out;
        warm_s += ex.candidate.time_call(fns.candidate, s.get_args(), out);
        if (!out.ok()) return fail("warmup", warm, out);
        ++warm;
        if (warm >= 1000) break;
    }

    measure::stopping_rule rule(b.stop);
    std::vector<double> samples;
    json checks = json::array();
    int s = 0;
    while (!rule.is_done()) {
        auto& set = *sets[static_cast<std::size_t>(s % n_sets)];
        const bool checked = b.check_every > 0 && (s % b.check_every) == b.check_every - 1 &&
                             static_cast<int>(checks.size()) < b.max_checks;
        if (checked) {
            // New values at the same addresses: a candidate that caches on pointers or skips
            // work after the first call produces stale outputs here.
            set.fill_inputs_shifted(spare, derive_seed(b.seed, "check" + std::to_string(s)));
            set.poison_outputs();
            set.prepare();
        }
        ex.candidate.flush_caches(b.flush_bytes);
        call_outcome out;
        const double dt = ex.candidate.time_call(fns.candidate, set.get_args(), out);
        if (!out.ok()) return fail("sample", s, out);
        samples.push_back(dt);
        rule.add(dt);
        if (checked) {
            set.collect();
            ref.copy_inputs_from(set);
            const int ref_rc = run_reference(ex.reference, fns.reference, ref);
            json facts = call_facts(out, set, ref, ref_rc);
            facts["sample"] = s;
            checks.push_back(std::move(facts));
        }
        ++s;
    }
    ev.write({{"event", "bench_result"},
              {"id", b.id},
              {"samples_s", samples},
              {"warmup_calls", warm},
              {"warmup_s", warm_s},
              {"stop_reason", measure::to_string(rule.get_state())},
              {"input_sets", n_sets},
              {"flush_bytes", b.flush_bytes},
              {"checks", checks}});
}

}  // namespace

int run_job(const job& j, event_writer& ev, executor_base& candidate_exec, executor_base& reference_exec) {
    ev.write({{"event", "start"}, {"pid", static_cast<long>(::getpid())}, {"abi", KL_ABI_VERSION},
              {"phase", to_string(j.phase)}, {"candidate_device", candidate_exec.describe()},
              {"reference_device", reference_exec.describe()}});
    std::unique_ptr<loaded_library> cand_lib, ref_lib;
    std::vector<entry_pair> fns(j.calls.size());
    try {
        ref_lib = std::make_unique<loaded_library>(j.reference_lib);
        cand_lib = std::make_unique<loaded_library>(j.candidate_lib);
        for (std::size_t i = 0; i < j.calls.size(); ++i) {
            fns[i].reference = ref_lib->get_entry(j.calls[i].reference_entry);
            fns[i].candidate = cand_lib->get_entry(j.calls[i].entry);
        }
    } catch (const std::exception& e) {
        ev.write({{"event", "fatal"}, {"message", e.what()}});
        return 3;
    }
    const executors ex{candidate_exec, reference_exec};
    try {
        if (j.phase == job_phase::gate) {
            for (const auto& c : j.gate) run_gate_case(j, c, fns[static_cast<std::size_t>(c.call)], ex, ev);
        } else {
            for (const auto& b : j.bench) run_bench_item(j, b, fns[static_cast<std::size_t>(b.call)], ex, ev);
        }
    } catch (const std::exception& e) {
        ev.write({{"event", "fatal"}, {"message", e.what()}});
        return 3;
    }
    ev.write({{"event", "done"}});
    return 0;
}

}  // namespace kloop::runner
