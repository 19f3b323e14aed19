// kloop eval: isolation and timer cross-check integrity checks.
#include "eval/isolation_checks.hpp"

#include <algorithm>
#include <map>

#include "eval/runner_session.hpp"
#include "measure/statistics.hpp"
#include "measure/timer_agreement.hpp"

namespace kloop::eval {

using nlohmann::json;

namespace {

measure::timer_calibration calibration_of(const json& isolation, std::size_t host) {
    measure::timer_calibration c;
    if (!isolation.is_object() || !isolation.contains("hosts") || host >= isolation.at("hosts").size()) return c;
    const auto cal = isolation.at("hosts").at(host).value("timer_calibration", json::object());
    c.overhead_median_s = cal.value("overhead_median_s", 0.0);
    c.overhead_p90_s = cal.value("overhead_p90_s", 0.0);
    c.slack_s = cal.value("slack_s", c.slack_s);
    return c;
}

// The calibration a series is held to: the host's, taken before its library was loaded, or —
// where the runner's calibration host measured the protocol's overhead during the series (at
// least k_min_live_overheads times: a series of three slow calls gets one after each) and found
// more — that: the machine's load now, which the candidate cannot influence
// (runner/remote_executor.hpp).
constexpr std::size_t k_min_live_overheads = 3;

measure::timer_calibration with_live_overheads(measure::timer_calibration c, const std::vector<double>& live) {
    if (live.size() < k_min_live_overheads) return c;
    const auto s = measure::summarize(live);
    c.overhead_median_s = std::max(c.overhead_median_s, s.median);
    c.overhead_p90_s = std::max(c.overhead_p90_s, s.p90);
    return c;
}

}  // namespace

json session_isolation(const std::vector<runner::event>& events) {
    const auto* start = start_of(events);
    if (start == nullptr) return nullptr;
    if (start->candidate_device.is_object() && start->candidate_device.contains("isolation"))
        return start->candidate_device.at("isolation");
    // The Python worker: the reference, the comparisons and the candidate share its process.
    return {{"process", "shared"},
            {"confined", false},
            {"detail", "the candidate ran in the same process as the reference and the checks (Python worker)"}};
}

json merge_isolation(const json& a, const json& b) {
    if (!a.is_object()) return b;
    if (!b.is_object()) return a;
    json m = a;
    m["confined"] = a.value("confined", false) && b.value("confined", false);
    if (a.value("process", std::string()) != b.value("process", std::string())) m["process"] = "shared";
    return m;
}

integrity_check isolation_check(const json& isolation) {
    if (!isolation.is_object()) return {"isolation", check_status::skipped, "no candidate code ran"};
    if (isolation.value("confined", false))
        return {"isolation", check_status::pass,
                "the candidate ran in its own confined process (seccomp, Landlock, no_new_privs); the reference, "
                "the comparisons and the results channel in another"};
    std::string why = isolation.value("detail", std::string());
    if (why.empty() && isolation.contains("hosts"))
        for (const auto& h : isolation.at("hosts")) {
            const auto c = h.value("confinement", json::object());
            if (!c.value("confined", false)) {
                why = c.value("detail", std::string("a layer of the confinement could not be applied"));
                break;
            }
        }
    return {"isolation", check_status::warn,
            "unconfined: " + (why.empty() ? std::string("the confinement was not applied") : why) +
                " (the loop promotes such a result only with --allow-unconfined)"};
}

integrity_check timer_cross_check(const runner::job& job, const std::vector<runner::event>& events, const std::string& only) {
    const json isolation = session_isolation(events);
    struct side {
        const char* name;
        std::vector<double> samples, windows;
        std::size_t host;
    };
    struct series {
        std::vector<side> sides;
        std::vector<double> live;  // the calibration host's overheads during the series
    };
    // The timed series of each item that has a result (a failed item has none to judge).
    std::map<int, series> by_item;
    for (const auto* r : events_of<runner::bench_result_event>(events)) {
        if (r->failure) continue;
        series x;
        std::vector<double> windows;
        for (const auto& info : r->sample_info) {
            if (!info.is_object()) continue;
            if (info.contains("window_s")) windows.push_back(info.at("window_s").get<double>());
            if (info.contains("calibration_overhead_s")) x.live.push_back(info.at("calibration_overhead_s").get<double>());
        }
        x.sides.push_back({"candidate", r->samples_s, std::move(windows), 0});
        by_item[r->id] = std::move(x);
    }
    for (const auto* r : events_of<runner::ab_result_event>(events)) {
        if (r->failure) continue;
        series x;
        x.live = r->calibration_overheads_s;
        x.sides.push_back({"candidate", r->candidate_samples_s, r->candidate_windows_s, 0});
        x.sides.push_back({"base", r->base_samples_s, r->base_windows_s, 1});
        by_item[r->id] = std::move(x);
    }
    int checked = 0;
    for (const auto& item : job.bench) {
        const auto it = by_item.find(item.id);
        if (it == by_item.end()) continue;
        const auto& plan = job.calls[static_cast<std::size_t>(item.call)];
        const auto& live = it->second.live;
        const auto& sides = it->second.sides;
        for (const auto& s : sides) {
            if (!only.empty() && only != s.name) continue;
            const auto verdict =
                measure::judge_timer(s.samples, s.windows, with_live_overheads(calibration_of(isolation, s.host), live));
            if (!verdict.checked) continue;
            ++checked;
            if (!verdict.pass)
                return {"timer_cross_check", check_status::fail,
                        plan.get_label() + " (" + s.name + "): " + verdict.detail};
        }
    }
    if (checked == 0)
        return {"timer_cross_check", check_status::skipped,
                "no timed call was observed by a second clock (the Python worker times in the candidate's process)"};
    return {"timer_cross_check", check_status::pass,
            std::to_string(checked) + " timed series agree with the checker's clock around every call"};
}

}  // namespace kloop::eval
