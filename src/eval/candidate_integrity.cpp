// kloop eval: imported-symbol and kernel-census integrity checks (candidate_integrity.hpp).
#include "eval/candidate_integrity.hpp"

#include "eval/runner_session.hpp"

#include <algorithm>
#include <map>

#include "check/census_rules.hpp"

namespace kloop::eval {

namespace {

using nlohmann::json;

check_status status_of(check::census_status s) {
    switch (s) {
        case check::census_status::pass: return check_status::pass;
        case check::census_status::warn: return check_status::warn;
        case check::census_status::fail: return check_status::fail;
        case check::census_status::skipped: return check_status::skipped;
    }
    return check_status::skipped;
}

}  // namespace

gate_census gather_gate_census(const runner::job& gate_job, const std::vector<runner::event>& gate_events) {
    gate_census out;
    std::map<int, const runner::gate_case*> cases;
    for (const auto& c : gate_job.gate) cases[c.id] = &c;
    if (const auto* start = start_of(gate_events); start != nullptr && start->candidate_device.is_object())
        out.device_flush_bytes = start->candidate_device.value("flush_bytes_per_sample", std::uint64_t{0});
    for (const auto* r : events_of<runner::case_result_event>(gate_events)) {
        const json& e = r->facts;
        const auto it = cases.find(r->id);
        if (it == cases.end()) continue;
        const auto& plan = gate_job.calls[static_cast<std::size_t>(it->second->call)];
        const auto label = plan.get_label() + " trial " + std::to_string(it->second->trial);
        if (e.contains("census")) out.calls.push_back(check::census_call_from_json(e.at("census"), label, plan.get_label()));
        if (e.contains("same_address_recheck") && e.at("same_address_recheck").contains("census"))
            out.calls.push_back(check::census_call_from_json(e.at("same_address_recheck").at("census"),
                                                             label + " same-address recheck", plan.get_label()));
    }
    return out;
}

std::map<std::string, double> event_proxies(const std::vector<timed_shape>& shapes, std::uint64_t evict_bytes,
                                            std::uint64_t device_flush_bytes) {
    std::map<std::string, double> out;
    for (const auto& s : shapes) {
        auto flush = std::max({s.flush_bytes, evict_bytes, device_flush_bytes});
        if (flush == 0) flush = std::uint64_t{256} << 20;
        if (s.median_s > 0 && s.bytes && *s.bytes >= static_cast<double>(flush)) out[s.key] = s.median_s;
    }
    return out;
}

std::vector<integrity_check> judge_gate_census(const gate_census& census, const std::map<std::string, double>& proxies) {
    auto calls = census.calls;
    for (auto& call : calls)
        if (!call.event_s)
            if (auto it = proxies.find(call.key); it != proxies.end()) {
                call.event_s = it->second;
                call.event_is_proxy = true;
            }
    std::vector<integrity_check> out;
    for (auto& v : check::judge_census(calls, census.aten_glue_share)) out.push_back({v.name, status_of(v.status), std::move(v.detail)});
    return out;
}

std::vector<integrity_check> census_checks(const gate_census& census, const bench_report& bench) {
    std::vector<timed_shape> timed;
    for (const auto& s : bench.shapes)
        if (s.stats_s) timed.push_back({s.mode + "/" + s.shape, s.stats_s->median, s.bytes, s.flush_bytes});
    return judge_gate_census(census, event_proxies(timed, bench.evict_bytes, census.device_flush_bytes));
}

std::map<std::string, std::vector<std::string>> census_kernel_names(const runner::job& gate_job,
                                                                    const std::vector<runner::event>& gate_events) {
    std::map<std::string, std::vector<std::string>> out;
    auto add = [&](const json& census, const std::string& mode) {
        const auto call = check::census_call_from_json(census, "", "");
        if (!call.available) return;
        auto& names = out[mode];
        for (const auto& k : call.kernels)
            if (std::find(names.begin(), names.end(), k.name) == names.end()) names.push_back(k.name);
    };
    for (const auto* r : events_of<runner::case_result_event>(gate_events)) {
        const json& e = r->facts;
        for (const auto& c : gate_job.gate) {
            if (c.id != r->id) continue;
            const auto& mode = gate_job.calls[static_cast<std::size_t>(c.call)].mode;
            if (e.contains("census")) add(e.at("census"), mode);
        }
    }
    return out;
}

}  // namespace kloop::eval
