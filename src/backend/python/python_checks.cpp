// kloop backend/python: python_source_screen and numeric_flags_unchanged (python_checks.hpp).
#include "backend/python/python_checks.hpp"

#include <fmt/format.h>

#include "backend/python/python_worker.hpp"
#include "core/error.hpp"

namespace kloop::backend::python {

using nlohmann::json;

eval::integrity_check source_screen_check(const std::filesystem::path& candidate_manifest) {
    eval::integrity_check c{"python_source_screen", eval::check_status::pass, "no import or call the screen flags"};
    json findings;
    try {
        findings = read_manifest(candidate_manifest).probe.value("screen", json::array());
    } catch (const usage_error& e) {
        // A manifest kloop wrote and cannot read is not one it can vouch for.
        return {"python_source_screen", eval::check_status::fail, e.what()};
    }
    if (!findings.is_array() || findings.empty()) return c;
    std::string detail;
    bool fail = false;
    for (const auto& f : findings) {
        const std::string sev = f.value("severity", "fail");
        fail = fail || sev == "fail";
        detail += fmt::format("{}{} {}: {} (line {})", detail.empty() ? "" : "; ", sev, f.value("rule", "?"),
                              f.value("what", "?"), f.value("line", 0));
    }
    c.status = fail ? eval::check_status::fail : eval::check_status::warn;
    c.detail = detail;
    return c;
}

namespace {

// The first "numeric_flags_changed" list in an event, looking into nested call facts.
const json* find_change(const json& e) {
    if (!e.is_object()) return nullptr;
    if (e.contains("numeric_flags_changed")) return &e.at("numeric_flags_changed");
    for (const char* key : {"same_address_recheck"})
        if (e.contains(key))
            if (const json* c = find_change(e.at(key))) return c;
    for (const char* key : {"checks", "base_checks", "candidate_checks"})
        if (e.contains(key) && e.at(key).is_array())
            for (const auto& x : e.at(key))
                if (const json* c = find_change(x)) return c;
    return nullptr;
}

std::string describe_change(const json& list, const json& event) {
    std::string s;
    for (const auto& f : list)
        s += fmt::format("{}{} was {} (expected {})", s.empty() ? "" : "; ", f.value("name", "?"), f.value("actual", "?"),
                         f.value("expected", "?"));
    const std::string kind = event.value("event", "");
    const std::string where = kind == "case_result" ? fmt::format("gate case {}", event.value("id", -1))
                              : kind == "bench_result" ? fmt::format("bench item {}", event.value("id", -1))
                              : kind == "ab_result"    ? fmt::format("A/B item {}", event.value("id", -1))
                                                       : kind;
    return fmt::format("after a candidate call ({}): {}; the candidate must leave numeric flags as the spec sets "
                       "them for the reference and itself ([python] allow_tf32)",
                       where, s);
}

}  // namespace

eval::integrity_check numeric_flags_check(const std::vector<const std::vector<runner::event>*>& sessions) {
    bool held = false;
    std::string held_list;
    int calls = 0;
    for (const auto* events : sessions) {
        if (events == nullptr) continue;
        for (const auto& e : *events) {
            if (const auto* start = std::get_if<runner::start_event>(&e); start != nullptr && start->worker.is_object()) {
                const auto& flags = start->worker.value("numeric_flags", json());
                if (flags.is_object() && !flags.empty()) {
                    held = true;
                    held_list.clear();
                    for (const auto& [k, v] : flags.items())
                        held_list += (held_list.empty() ? "" : ", ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
                }
            }
            const auto kind = runner::kind_of(e);
            if (kind == runner::event_kind::case_result || kind == runner::event_kind::bench_result ||
                kind == runner::event_kind::ab_result) {
                ++calls;
                const json j = runner::to_json(e);  // the call facts it carries, nested as written
                if (const json* c = find_change(j)) return {"numeric_flags_unchanged", eval::check_status::fail, describe_change(*c, j)};
            }
        }
    }
    if (!held) return {"numeric_flags_unchanged", eval::check_status::skipped, "numpy tensors: no global numeric flags to hold"};
    if (calls == 0) return {"numeric_flags_unchanged", eval::check_status::skipped, "no candidate call reported"};
    return {"numeric_flags_unchanged", eval::check_status::pass, "unchanged after every candidate call: " + held_list};
}

}  // namespace kloop::backend::python
