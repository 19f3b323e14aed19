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

// Compare every output of `cand` against `ref`; also report the reference's own non-finite values
// (a broken reference must not make every candidate look wrong silently).
json compare_json(const call_buffers& cand, const call_buffers& ref) {
    json outs = json::array();
    const auto& plan = cand.get_plan();
    for (std::size_t i = 0; i < plan.outputs.size(); ++i) {
        const auto& t = plan.outputs[i];
        const auto m = check::compare_outputs(t.type, cand.get_output(i).data(), ref.get_output(i).data(),
                                              t.numel(), t.tol);
        const auto self = check::compare_outputs(t.type, ref.get_output(i).data(), ref.get_output(i).data(),
                                                 t.numel(), t.tol);
        json o = {{"name", t.name}, {"metrics", m}, {"reference_nonfinite", self.nan_count + self.inf_count}};
        outs.push_back(std::move(o));
    }
    return outs;
}

bool outputs_bitwise_equal(const call_buffers& a, const call_buffers& b) {
    for (std::size_t i = 0; i < a.get_plan().outputs.size(); ++i)
        if (std::memcmp(a.get_output(i).data(), b.get_output(i).data(), a.get_output(i).bytes()) != 0)
            return false;
    return true;
}

void run_gate_case(const job& j, const gate_case& c, const entry_pair& fns, event_writer& ev) {
    const auto& plan = j.calls[static_cast<std::size_t>(c.call)];
    ev.write({{"event", "case_start"}, {"id", c.id}});

    call_buffers ref(plan);
    ref.fill_inputs(c.seed);
    ev.write({{"event", "stage"}, {"id", c.id}, {"stage", "reference"}});
    const int ref_rc = fns.reference(&ref.get_args());
    if (ref_rc != 0) {
        ev.write({{"event", "case_result"}, {"id", c.id}, {"reference_return_code", ref_rc}});
        return;
    }

    // Fresh buffers (other addresses) with the same values; outputs poisoned by construction.
    auto cand = std::make_unique<call_buffers>(plan);
    cand->copy_inputs_from(ref);
    ev.write({{"event", "stage"}, {"id", c.id}, {"stage", "candidate"}});
    const auto t0 = clock_type::now();
    const int rc = fns.candidate(&cand->get_args());
    const double call_s = std::chrono::duration<double>(clock_type::now() - t0).count();

    json result = {{"event", "case_result"},
                   {"id", c.id},
                   {"return_code", rc},
                   {"call_s", call_s},
                   {"changed_inputs", changed_inputs_json(cand->find_changed_inputs())},
                   {"red_zone_violations", red_zone_json(cand->find_red_zone_violations())},
                   {"outputs", compare_json(*cand, ref)}};

    if (rc == 0 && c.trial == 0) {
        // Same addresses, new values, right after the first call: the candidate is called again
        // on the same buffers refilled from another seed. A result cached on pointers (or on
        // anything but the values) comes back stale here, before any timing.
        ev.write({{"event", "stage"}, {"id", c.id}, {"stage", "same_address_recheck"}});
        cand->fill_inputs(derive_seed(c.seed, "same-address"));
        cand->poison_outputs();
        const int rc_same = fns.candidate(&cand->get_args());
        ref.copy_inputs_from(*cand);
        ref.poison_outputs();
        const int ref_rc_same = fns.reference(&ref.get_args());
        result["same_address_recheck"] = {{"return_code", rc_same},
                                          {"reference_return_code", ref_rc_same},
                                          {"changed_inputs", changed_inputs_json(cand->find_changed_inputs())},
                                          {"red_zone_violations", red_zone_json(cand->find_red_zone_violations())},
                                          {"outputs", compare_json(*cand, ref)}};

        // Determinism: the same values on fresh buffers must give identical bits.
        ev.write({{"event", "stage"}, {"id", c.id}, {"stage", "determinism"}});
        call_buffers again(plan);
        again.copy_inputs_from(*cand);
        const int rc_again = fns.candidate(&again.get_args());
        result["deterministic"] = rc_same == 0 && rc_again == 0 && outputs_bitwise_equal(*cand, again);
    }
    ev.write(result);
}

// Writes one byte into every cache line of the flush buffer, so each line is pulled into the
// cache hierarchy (evicting the candidate's data) at the cost of one pass. Writes through a
// volatile pointer so the compiler cannot drop the traffic.
void flush_caches(std::vector<unsigned char>& buf, unsigned char pattern) {
    volatile unsigned char* p = buf.data();
    for (std::size_t i = 0; i < buf.size(); i += 64) p[i] = pattern;
}

void run_bench_item(const job& j, const bench_item& b, const entry_pair& fns, event_writer& ev) {
    const auto& plan = j.calls[static_cast<std::size_t>(b.call)];
    ev.write({{"event", "bench_start"}, {"id", b.id}});

    const int n_sets = std::max(1, b.input_sets);
    std::vector<std::unique_ptr<call_buffers>> sets;
    // Set 0 is drawn from the seed; the others are shifted arrangements of it (memcpy speed);
    // `spare` is the source of the new values given to checked samples.
    call_buffers spare(plan);
    spare.fill_inputs(derive_seed(b.seed, "spare"));
    for (int k = 0; k < n_sets; ++k) {
        sets.push_back(std::make_unique<call_buffers>(plan));
        if (k == 0) sets.back()->fill_inputs(derive_seed(b.seed, "set0"));
        else sets.back()->fill_inputs_shifted(*sets.front(), derive_seed(b.seed, "set" + std::to_string(k)));
    }
    call_buffers ref(plan);
    std::vector<unsigned char> flush(b.flush_bytes);

    auto fail = [&](const char* where, int sample, int rc) {
        ev.write({{"event", "bench_result"}, {"id", b.id}, {"error", where}, {"sample", sample}, {"return_code", rc}});
    };

    // Warm-up: page in code and data, let frequency governors settle.
    int warm = 0;
    const auto warm_start = clock_type::now();
    while (warm < b.warmup_min_calls ||
           std::chrono::duration<double>(clock_type::now() - warm_start).count() < b.warmup_min_s) {
        auto& s = *sets[static_cast<std::size_t>(warm % n_sets)];
        if (const int rc = fns.candidate(&s.get_args()); rc != 0) return fail("warmup", warm, rc);
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
        }
        flush_caches(flush, static_cast<unsigned char>(s));
        const auto t0 = clock_type::now();
        const int rc = fns.candidate(&set.get_args());
        const auto t1 = clock_type::now();
        if (rc != 0) return fail("sample", s, rc);
        const double dt = std::chrono::duration<double>(t1 - t0).count();
        samples.push_back(dt);
        rule.add(dt);
        if (checked) {
            ref.copy_inputs_from(set);
            ref.poison_outputs();
            const int ref_rc = fns.reference(&ref.get_args());
            checks.push_back({{"sample", s},
                              {"return_code", rc},
                              {"reference_return_code", ref_rc},
                              {"changed_inputs", changed_inputs_json(set.find_changed_inputs())},
                              {"red_zone_violations", red_zone_json(set.find_red_zone_violations())},
                              {"outputs", compare_json(set, ref)}});
        }
        ++s;
    }
    ev.write({{"event", "bench_result"},
              {"id", b.id},
              {"samples_s", samples},
              {"warmup_calls", warm},
              {"stop_reason", measure::to_string(rule.get_state())},
              {"input_sets", n_sets},
              {"flush_bytes", b.flush_bytes},
              {"checks", checks}});
}

}  // namespace

int run_job(const job& j, event_writer& ev) {
    ev.write({{"event", "start"}, {"pid", static_cast<long>(::getpid())}, {"abi", KL_ABI_VERSION},
              {"phase", to_string(j.phase)}});
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
    if (j.phase == job_phase::gate) {
        for (const auto& c : j.gate) run_gate_case(j, c, fns[static_cast<std::size_t>(c.call)], ev);
    } else {
        for (const auto& b : j.bench) run_bench_item(j, b, fns[static_cast<std::size_t>(b.call)], ev);
    }
    ev.write({{"event", "done"}});
    return 0;
}

}  // namespace kloop::runner
