// kloop runner: the interleaved A/B phase.
#include "runner/ab_phase.hpp"

#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/rng.hpp"
#include "measure/early_verdict.hpp"
#include "measure/stopping_rule.hpp"
#include "measure/timer_agreement.hpp"
#include "runner/progress_clock.hpp"

namespace kloop::runner {

using nlohmann::json;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int base_side = 0;
constexpr int candidate_side = 1;

const char* side_name(int side) { return side == base_side ? "base" : "candidate"; }

// ABBA: even rounds run the base first, odd rounds the candidate first.
int side_at(int round, int position) { return (round % 2 == 0) == (position == 0) ? base_side : candidate_side; }

}  // namespace

void run_ab_item(const job& j, const bench_item& b, const entry_pair& fns, const executors& ex, event_writer& ev) {
    const auto& plan = j.calls[static_cast<std::size_t>(b.call)];
    ev.write(item_start_event{event_kind::ab_start, b.id});
    const std::array<entry_fn, 2> fn = {fns.base, fns.candidate};
    executor_base& exec = ex.candidate;

    // The input sets, built exactly as the bench builds them; both sides use the same ones.
    const int n_sets = std::max(1, b.input_sets);
    std::vector<std::unique_ptr<call_buffers>> sets;
    for (int k = 0; k < n_sets; ++k) {
        sets.push_back(std::make_unique<call_buffers>(plan, exec));
        if (k == 0) sets.back()->fill_inputs(derive_seed(b.seed, "set0"));
        else sets.back()->fill_inputs_shifted(*sets.front(), derive_seed(b.seed, "set" + std::to_string(k)));
        sets.back()->prepare();
    }
    call_buffers ref(plan, ex.reference);
    // One preparation for both sides: every call of either is prepared alike (call_checks.hpp).
    call_preparation prep(b, plan);
    std::uint64_t next_set = 0;  // one rotation over every call of both sides
    auto take_set = [&]() -> call_buffers& { return *sets[static_cast<std::size_t>(next_set++ % static_cast<std::uint64_t>(n_sets))]; };

    std::array<std::vector<double>, 2> samples;
    std::array<std::vector<double>, 2> windows;  // the checker's clock per kept sample
    std::array<json, 2> sample_info = {json::array(), json::array()};  // the executor's, per kept sample
    std::vector<double> live_overheads;          // the calibration host's overhead now and then (CPU hosts)
    std::array<json, 2> checks = {json::array(), json::array()};
    auto fail = [&](const char* where, int side, std::size_t sample, const call_outcome& out) {
        ab_result_event e;
        e.id = b.id;
        e.failure = call_failure{where, static_cast<int>(sample), out.return_code, out.device_error, {}, side_name(side)};
        e.base_samples_s = samples[0];
        e.candidate_samples_s = samples[1];
        ev.write(e);
    };

    // Warm-up, interleaved too: each side gets its minimum calls, together at least twice the
    // bench's minimum warm-up time (about that much each).
    ev.write(stage_event{b.id, "warmup"});
    std::array<int, 2> warm = {0, 0};
    std::array<double, 2> warm_s = {0, 0};
    const auto warm_start = clock_type::now();
    for (int r = 0; r < 1000; ++r) {
        if (warm[0] >= b.warmup_min_calls && warm[1] >= b.warmup_min_calls &&
            std::chrono::duration<double>(clock_type::now() - warm_start).count() >= 2 * b.warmup_min_s)
            break;
        for (int pos = 0; pos < 2; ++pos) {
            const int side = side_at(r, pos);
            auto& set = take_set();
            prep.before_call(set);
            call_outcome out;
            warm_s[static_cast<std::size_t>(side)] += exec.time_call(fn[static_cast<std::size_t>(side)], set.get_args(), out);
            if (!out.ok()) return fail("warmup", side, static_cast<std::size_t>(warm[static_cast<std::size_t>(side)]), out);
            if (auto g = guard_facts(out, set); !g.is_null()) {
                g["sample"] = -1 - warm[static_cast<std::size_t>(side)];
                checks[static_cast<std::size_t>(side)].push_back(std::move(g));
            }
            ++warm[static_cast<std::size_t>(side)];
        }
    }

    ev.write(stage_event{b.id, "timing"});
    progress_clock ticker;
    std::array<measure::stopping_rule, 2> rule = {measure::stopping_rule(b.stop), measure::stopping_rule(b.stop)};
    std::array<measure::stop_reason, 2> stopped = {measure::stop_reason::not_done, measure::stop_reason::not_done};
    std::array<int, 2> checked_calls = {0, 0};
    std::string item_stop = "both_done";
    std::string early;  // the verdict that ended the item early, if one did
    std::array<int, 2> discarded = {0, 0};
    constexpr int max_retakes = 10;
    for (int r = 0;; ++r) {
        // Where the executor has windows, nothing ends the item before each side has the job's
        // timer_min_windows of them, for the timer cross-check.
        const auto min_windows = static_cast<std::size_t>(std::max(0, b.timer_min_windows));
        const bool windowed = !windows[0].empty() || !windows[1].empty();
        const bool may_end = !windowed || (windows[0].size() >= min_windows && windows[1].size() >= min_windows);
        // A side's rule latches when it first says done; the item goes on until both have, so
        // every sample of either side stays interleaved with the other's.
        if (may_end && stopped[0] != measure::stop_reason::not_done && stopped[1] != measure::stop_reason::not_done)
            break;
        bool capped = false;
        for (std::size_t s = 0; s < 2 && may_end; ++s) {
            if (rule[s].get_total_time_s() >= b.stop.max_time_s) capped = true, item_stop = "time_cap";
            else if (rule[s].get_count() >= b.stop.max_samples) capped = true, item_stop = "sample_cap";
        }
        if (capped) break;

        for (int pos = 0; pos < 2; ++pos) {
            const int side = side_at(r, pos);
            const auto si = static_cast<std::size_t>(side);
            auto& set = take_set();
            call_outcome out;
            double dt = 0;
            const auto sample_start = std::chrono::steady_clock::now();
            for (int attempt = 0;; ++attempt) {
                // A retaken sample is prepared again, as every call is.
                prep.before_call(set, [&] { exec.flush_caches_now_for(fn[si], b.flush_bytes); });
                out = call_outcome{};
                dt = exec.time_call(fn[si], set.get_args(), out);
                if (!out.ok()) break;
                // A sample the executor took while the device was throttled is retaken at once
                // (the executor has cooled down already), a bounded number of times.
                const json info = exec.last_sample_info();
                if (attempt < max_retakes && info.is_object() && info.value("discard", false)) {
                    ++discarded[si];
                    continue;
                }
                break;
            }
            if (!out.ok()) return fail("sample", side, samples[si].size(), out);
            samples[si].push_back(dt);
            if (const json info = exec.last_sample_info(); info.is_object()) {
                if (info.contains("window_s")) {
                    windows[si].push_back(info.at("window_s").get<double>());
                    if (info.contains("calibration_overhead_s"))
                        live_overheads.push_back(info.at("calibration_overhead_s").get<double>());
                }
                sample_info[si].push_back(info);
            }
            rule[si].add(dt, std::chrono::duration<double>(std::chrono::steady_clock::now() - sample_start).count());
            if (stopped[si] == measure::stop_reason::not_done && rule[si].is_done()) stopped[si] = rule[si].get_state();
            if (prep.draw_checked(samples[si].size() - 1)) {
                ++checked_calls[si];
                json facts = checked_facts(out, set, ref, ex, fns.reference);
                facts["sample"] = samples[si].size() - 1;
                checks[si].push_back(std::move(facts));
            } else if (auto g = guard_facts(out, set); !g.is_null()) {
                g["sample"] = samples[si].size() - 1;
                checks[si].push_back(std::move(g));
            }
        }
        if (ticker.due()) ev.write(progress_of(b.id, rule[0], &rule[1]));
        // Both sides have the same count after a round: a look, once each has its minimum time.
        const auto& ev_cfg = b.early_verdict;
        if (ev_cfg.enabled && measure::is_early_verdict_look(samples[0].size(), ev_cfg) &&
            samples[0].size() >= b.stop.min_samples && rule[0].get_total_time_s() >= ev_cfg.min_time_s &&
            rule[1].get_total_time_s() >= ev_cfg.min_time_s)
            if (const auto v = measure::settled_verdict(samples[0], samples[1], ev_cfg)) {
                item_stop = "early_verdict";
                early = measure::to_string(*v);
                break;
            }
    }
    // The final check of each side: one more call, after the last round, prepared like every
    // other and compared — neither side can know which of its calls is the last. Not a sample.
    if (b.check_every > 0 && !samples[0].empty())
        for (int side : {base_side, candidate_side}) {
            const auto si = static_cast<std::size_t>(side);
            auto& set = take_set();
            prep.before_call(set, [&] { exec.flush_caches_now_for(fn[si], b.flush_bytes); });
            call_outcome out;
            (void)exec.time_call(fn[si], set.get_args(), out);
            if (!out.ok()) return fail("final check", side, samples[si].size(), out);
            json facts = checked_facts(out, set, ref, ex, fns.reference);
            facts["sample"] = samples[si].size();
            facts["final"] = true;
            checks[si].push_back(std::move(facts));
        }
    // A side still going when the other reached a cap stops with it (the item's cap).
    auto reason = [&](std::size_t s) {
        return stopped[s] != measure::stop_reason::not_done ? measure::to_string(stopped[s]) : item_stop;
    };
    ab_result_event result;
    result.id = b.id;
    result.base_samples_s = samples[0];
    result.candidate_samples_s = samples[1];
    result.base_checks = std::move(checks[0]);
    result.candidate_checks = std::move(checks[1]);
    result.base_stop_reason = reason(0);
    result.candidate_stop_reason = reason(1);
    result.stop = item_stop;
    result.base_warmup_calls = warm[0];
    result.candidate_warmup_calls = warm[1];
    result.input_sets = n_sets;
    result.flush_bytes = b.flush_bytes;
    result.base_discarded_samples = discarded[0];
    result.candidate_discarded_samples = discarded[1];
    if (!early.empty()) result.early_verdict = early;
    result.base_windows_s = windows[0];
    result.candidate_windows_s = windows[1];
    result.calibration_overheads_s = std::move(live_overheads);
    result.base_sample_info = std::move(sample_info[0]);
    result.candidate_sample_info = std::move(sample_info[1]);
    result.base_checked_calls = checked_calls[0];
    result.candidate_checked_calls = checked_calls[1];
    ev.write(result);
}

}  // namespace kloop::runner
