// kloop runner: gate and bench phases (the A/B phase is in ab_phase.cpp).
#include "runner/runner.hpp"

#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/rng.hpp"
#include "measure/statistics.hpp"
#include "measure/stopping_rule.hpp"
#include "measure/timer_agreement.hpp"
#include "runner/ab_phase.hpp"
#include "runner/call_buffers.hpp"
#include "runner/progress_clock.hpp"
#include "runner/call_checks.hpp"
#include "runner/loaded_library.hpp"
#include "runner/remote_executor.hpp"
#include "platform/sealed_copy.hpp"

namespace kloop::runner {

using nlohmann::json;
using clock_type = std::chrono::steady_clock;

namespace {

// The executor's other timing of the same call (CUDA: graph replay of short kernels, whose
// fields the schema has) into the result, read as the orchestrator will read it.
void add_graph_replay(bench_result_event& result, const json& extra) {
    if (!extra.is_object() || extra.empty()) return;
    json j = to_json(result);
    j.update(extra);
    result = std::get<bench_result_event>(event_from_json(j));
}

// A library loaded from a sealed copy of its file (platform/sealed_copy.hpp), refused when the
// copy's hash differs from the one recorded at build time.
struct verified_library {
    platform::sealed_copy copy;
    loaded_library library;

    verified_library(const std::string& path, const std::string& sha256)
        : copy(checked_copy(path, sha256)), library("/proc/self/fd/" + std::to_string(copy.fd)) {}
    ~verified_library() = default;  // the descriptor stays open: the library is never unloaded

    static platform::sealed_copy checked_copy(const std::string& path, const std::string& sha256) {
        auto c = platform::make_sealed_copy(path);
        if (!sha256.empty() && c.sha256 != sha256)
            throw std::runtime_error("'" + path + "' is not the library that was built (SHA-256 " + c.sha256 +
                                     ", built as " + sha256 + "): refusing to load it");
        return c;
    }
};

void run_gate_case(const job& j, const gate_case& c, const entry_pair& fns, const executors& ex, event_writer& ev) {
    const auto& plan = j.calls[static_cast<std::size_t>(c.call)];
    ev.write(item_start_event{event_kind::case_start, c.id});

    call_buffers ref(plan, ex.reference);
    ref.fill_inputs(c.seed);
    ev.write(stage_event{c.id, "reference"});
    const int ref_rc = run_reference(ex.reference, fns.reference, ref);
    if (ref_rc != 0) {
        ev.write(case_result_event{c.id, {{"reference_return_code", ref_rc}}});
        return;
    }

    // Fresh buffers (other addresses) with the same values; outputs poisoned by construction.
    auto cand = std::make_unique<call_buffers>(plan, ex.candidate);
    cand->copy_inputs_from(ref);
    ev.write(stage_event{c.id, "candidate"});
    const auto t0 = clock_type::now();
    const auto out = run_checked(ex.candidate, fns.candidate, *cand);
    const double call_s = std::chrono::duration<double>(clock_type::now() - t0).count();
    if (!out.device_error.empty()) {
        // A sticky device error poisons the context: report it and stop this runner.
        ev.write(case_result_event{c.id, {{"return_code", out.return_code}, {"device_error", out.device_error}}});
        throw std::runtime_error("device error in the candidate: " + out.device_error);
    }
    json result = call_facts(out, *cand, ref, 0);
    result["call_s"] = call_s;
    double candidate_s = call_s;  // every candidate call of this case, for kloop's overhead accounting

    if (out.ok() && c.trial == 0) {
        // Same addresses, new values, right after the first call: the candidate is called again
        // on the same buffers refilled from another seed. A result cached on pointers (or on
        // anything but the values) comes back stale here, before any timing.
        ev.write(stage_event{c.id, "same_address_recheck"});
        cand->fill_inputs(derive_seed(c.seed, "same-address"));
        cand->poison_outputs();
        auto t_same = clock_type::now();
        const auto out_same = run_checked(ex.candidate, fns.candidate, *cand);
        candidate_s += std::chrono::duration<double>(clock_type::now() - t_same).count();
        ref.copy_inputs_from(*cand);
        const int ref_rc_same = run_reference(ex.reference, fns.reference, ref);
        result["same_address_recheck"] = call_facts(out_same, *cand, ref, ref_rc_same);

        // Determinism: the same values on fresh buffers must give identical bits.
        ev.write(stage_event{c.id, "determinism"});
        call_buffers again(plan, ex.candidate);
        again.copy_inputs_from(*cand);
        t_same = clock_type::now();
        const auto out_again = run_checked(ex.candidate, fns.candidate, again);
        candidate_s += std::chrono::duration<double>(clock_type::now() - t_same).count();
        result["deterministic"] = out_same.ok() && out_again.ok() && outputs_bitwise_equal(*cand, again);
    }
    result["candidate_s"] = candidate_s;
    ev.write(case_result_event{c.id, std::move(result)});
}

void run_bench_item(const job& j, const bench_item& b, const entry_pair& fns, const executors& ex, event_writer& ev) {
    const auto& plan = j.calls[static_cast<std::size_t>(b.call)];
    ev.write(item_start_event{event_kind::bench_start, b.id});

    const int n_sets = std::max(1, b.input_sets);
    std::vector<std::unique_ptr<call_buffers>> sets;
    // Set 0 is drawn from the seed; the others are shifted arrangements of it (memcpy speed).
    for (int k = 0; k < n_sets; ++k) {
        sets.push_back(std::make_unique<call_buffers>(plan, ex.candidate));
        if (k == 0) sets.back()->fill_inputs(derive_seed(b.seed, "set0"));
        else sets.back()->fill_inputs_shifted(*sets.front(), derive_seed(b.seed, "set" + std::to_string(k)));
        sets.back()->prepare();
    }
    call_buffers ref(plan, ex.reference);
    call_preparation prep(b, plan);

    auto fail = [&](const char* where, int sample, const call_outcome& out) {
        bench_result_event e;
        e.id = b.id;
        e.failure = call_failure{where, sample, out.return_code, out.device_error, {}, {}};
        ev.write(e);
    };

    // Warm-up: page in code and data, let clocks and caches settle. Every call, here as below,
    // is prepared the same way (call_preparation) and its guards are checked afterwards.
    json checks = json::array();
    int warm = 0;
    double warm_s = 0;
    const auto warm_start = clock_type::now();
    while (warm < b.warmup_min_calls ||
           std::chrono::duration<double>(clock_type::now() - warm_start).count() < b.warmup_min_s) {
        auto& s = *sets[static_cast<std::size_t>(warm % n_sets)];
        prep.before_call(s);
        call_outcome out;
        warm_s += ex.candidate.time_call(fns.candidate, s.get_args(), out);
        if (!out.ok()) return fail("warmup", warm, out);
        if (auto g = guard_facts(out, s); !g.is_null()) {
            g["sample"] = -1 - warm;  // warm-up calls count down from -1
            checks.push_back(std::move(g));
        }
        ++warm;
        if (warm >= 1000) break;
    }

    measure::stopping_rule rule(b.stop);
    progress_clock ticker;
    std::vector<double> samples;
    json sample_info = json::array();  // per kept sample, from executors that know clocks (CUDA)
    int discarded = 0;
    int s = 0;
    int checked_calls = 0;
    // A series the timer cross-check judges (its samples carry the checker's windows) goes on
    // past a cap until it has the job's timer_min_windows of them.
    auto too_few_windows = [&] {
        return samples.size() < static_cast<std::size_t>(std::max(0, b.timer_min_windows)) && !sample_info.empty() &&
               sample_info.back().is_object() && sample_info.back().contains("window_s");
    };
    while (!rule.is_done() || too_few_windows()) {
        auto& set = *sets[static_cast<std::size_t>(s % n_sets)];
        double flush_s = 0;
        prep.before_call(set, [&] {
            const auto flush_start = clock_type::now();
            ex.candidate.flush_caches_now_for(fns.candidate, b.flush_bytes);
            flush_s = std::chrono::duration<double>(clock_type::now() - flush_start).count();
        });
        const auto call_start = clock_type::now();
        call_outcome out;
        const double dt = ex.candidate.time_call(fns.candidate, set.get_args(), out);
        const double cost = flush_s + std::chrono::duration<double>(clock_type::now() - call_start).count();
        if (!out.ok()) return fail("sample", s, out);
        // A sample the executor took while the device was throttled is dropped and retaken (the
        // executor has cooled down already); see executor_base::last_sample_info.
        json info = ex.candidate.last_sample_info();
        if (info.is_object() && info.value("discard", false)) {
            ++discarded;
            continue;
        }
        if (!info.is_null()) sample_info.push_back(std::move(info));
        samples.push_back(dt);
        rule.add(dt, cost);
        if (ticker.due()) ev.write(progress_of(b.id, rule));
        if (prep.draw_checked(static_cast<std::size_t>(s))) {
            ++checked_calls;
            json facts = checked_facts(out, set, ref, ex, fns.reference);
            facts["sample"] = s;
            checks.push_back(std::move(facts));
        } else if (auto g = guard_facts(out, set); !g.is_null()) {
            g["sample"] = s;
            checks.push_back(std::move(g));
        }
        ++s;
    }
    // The final check: one more call, after the last sample, prepared like every other and
    // checked — a candidate cannot know which call is the last. Not a timing sample.
    if (b.check_every > 0 && !samples.empty()) {
        auto& set = *sets[static_cast<std::size_t>(s % n_sets)];
        prep.before_call(set, [&] { ex.candidate.flush_caches_now_for(fns.candidate, b.flush_bytes); });
        call_outcome out;
        (void)ex.candidate.time_call(fns.candidate, set.get_args(), out);
        if (!out.ok()) return fail("final check", s, out);
        json facts = checked_facts(out, set, ref, ex, fns.reference);
        facts["sample"] = s;
        facts["final"] = true;
        checks.push_back(std::move(facts));
    }
    bench_result_event result;
    result.id = b.id;
    result.samples_s = samples;
    result.warmup_calls = warm;
    result.warmup_s = warm_s;
    result.stop_reason = measure::to_string(rule.get_state());
    result.input_sets = n_sets;
    result.flush_bytes = b.flush_bytes;
    result.checks = std::move(checks);
    result.checked_calls = checked_calls;
    result.discarded_samples = discarded;
    result.sample_info = std::move(sample_info);
    // Another timing of the same call, when the executor has one (CUDA: graph replay of short kernels).
    std::vector<const kl_args*> set_args;
    for (const auto& p : sets) set_args.push_back(&p->get_args());
    if (!samples.empty())
        add_graph_replay(result, ex.candidate.extra_timing(fns.candidate, set_args, measure::summarize(samples).median));
    ev.write(result);
}

// The profile phase: one input set, the warm-up, a flush outside the range, then exactly one
// candidate call inside the profiler range. Nothing else runs in the range — no reference, no
// validation, no flush kernel — so `ncu --profile-from-start off` sees the candidate's kernels
// only. The wall time is reported for the record, never as a benchmark result.
void run_profile_item(const job& j, const bench_item& b, const entry_pair& fns, const executors& ex, event_writer& ev) {
    const auto& plan = j.calls[static_cast<std::size_t>(b.call)];
    ev.write(item_start_event{event_kind::profile_start, b.id});
    call_buffers set(plan, ex.candidate);
    set.fill_inputs(derive_seed(b.seed, "set0"));
    set.prepare();
    auto fail = [&](const char* where, const call_outcome& out) {
        profile_result_event e;
        e.id = b.id;
        e.failure = call_failure{where, 0, out.return_code, out.device_error, {}, {}};
        ev.write(e);
    };
    for (int w = 0; w < std::max(1, b.warmup_min_calls); ++w) {
        const auto out = ex.candidate.invoke(fns.candidate, set.get_args());
        if (!out.ok()) return fail("warmup", out);
    }
    ex.candidate.flush_caches(b.flush_bytes);
    ex.candidate.profile_range(true);
    const auto t0 = clock_type::now();
    const auto out = ex.candidate.invoke(fns.candidate, set.get_args());
    const double wall_s = std::chrono::duration<double>(clock_type::now() - t0).count();
    ex.candidate.profile_range(false);
    if (!out.ok()) return fail("profiled call", out);
    profile_result_event result;
    result.id = b.id;
    result.wall_s = wall_s;
    result.warmup_calls = std::max(1, b.warmup_min_calls);
    ev.write(result);
}

}  // namespace

int run_job(const job& j, event_writer& ev, remote_executor& candidates, executor_base& reference_exec) {
    start_event start;
    start.pid = static_cast<long>(::getpid());
    start.abi = KL_ABI_VERSION;
    start.phase = to_string(j.phase);
    start.reference_device = reference_exec.describe();
    // The reference runs here, in the checker, from a sealed copy whose hash is the one built.
    std::optional<verified_library> ref_lib;
    std::vector<entry_pair> fns(j.calls.size());
    int cand_host = -1, base_host = -1;
    try {
        cand_host = candidates.add_host();
        if (j.phase == job_phase::ab) base_host = candidates.add_host();
        start.candidate_device = candidates.describe();
        ev.write(start);
        ref_lib.emplace(j.reference_lib, j.reference_sha256);
        candidates.load(cand_host, j.candidate_lib, j.candidate_sha256);
        if (base_host >= 0) candidates.load(base_host, j.base_lib, j.base_sha256);
        for (std::size_t i = 0; i < j.calls.size(); ++i) {
            fns[i].reference = ref_lib->library.get_entry(j.calls[i].reference_entry);
            fns[i].candidate = candidates.resolve(cand_host, j.calls[i].entry);
            if (base_host >= 0) fns[i].base = candidates.resolve(base_host, j.calls[i].entry);
        }
    } catch (const std::exception& e) {
        if (start.candidate_device.is_null()) ev.write(start);
        const bool died = dynamic_cast<const host_died*>(&e) != nullptr;
        ev.write(fatal_event{died ? std::string(e.what()) + " while loading the candidate" : e.what()});
        return 3;
    }
    const executors ex{candidates, reference_exec};
    try {
        if (j.phase == job_phase::gate) {
            for (const auto& c : j.gate) run_gate_case(j, c, fns[static_cast<std::size_t>(c.call)], ex, ev);
        } else if (j.phase == job_phase::ab) {
            for (const auto& b : j.bench) run_ab_item(j, b, fns[static_cast<std::size_t>(b.call)], ex, ev);
        } else if (j.phase == job_phase::profile) {
            for (const auto& b : j.bench) run_profile_item(j, b, fns[static_cast<std::size_t>(b.call)], ex, ev);
        } else {
            for (const auto& b : j.bench) run_bench_item(j, b, fns[static_cast<std::size_t>(b.call)], ex, ev);
        }
    } catch (const std::exception& e) {
        ev.write(fatal_event{e.what(), dynamic_cast<const host_died*>(&e) != nullptr});
        return 3;
    }
    ev.write(done_event{});
    return 0;
}

}  // namespace kloop::runner
