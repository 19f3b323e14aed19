// kloop loop: the no-go bar (see nogo.hpp).
#include "loop/nogo.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "report/detail/markdown.hpp"
#include "loop/ranking.hpp"

namespace kloop::loop {

nogo_assessment assess_nogo(const std::vector<iteration_record>& records, const std::string& given_bound) {
    nogo_assessment a;
    const iteration_record* base = records.empty() ? nullptr : &records.front();
    const auto g = base ? geomean_median_s(*base) : std::nullopt;
    a.items.push_back({"recorded baseline", g.has_value(),
                       g ? fmt::format("v0 geomean median {} ms over {} bench shapes", report::detail::ms(*g), base->bench.size())
                         : "missing: no baseline with a successful bench"});
    std::vector<const iteration_record*> reasoned, timed;
    for (const auto& r : records) {
        if (r.number == 0) continue;
        if (!r.direction.empty() && !r.expected.empty()) reasoned.push_back(&r);
        if (r.overall) timed.push_back(&r);
        if (r.status == iteration_status::positive && !a.positive) a.positive = r.number;
    }
    std::string list;
    for (const auto* r : reasoned) list += fmt::format("{}{} ({})", list.empty() ? "" : "; ", version_label(r->number), r->direction);
    a.items.push_back({"reasoned attempt", !reasoned.empty(),
                       reasoned.empty() ? "missing: no iteration with a proposal (Direction + Expected)" : list});
    std::string gates;
    for (const auto& r : records)
        if (r.number > 0)
            gates += fmt::format("{}{} {}", gates.empty() ? "" : ", ", version_label(r.number),
                                 r.gate_pass ? "green" : "red (" + to_string(r.rejection) + ")");
    a.items.push_back({"gate status", !reasoned.empty(), gates.empty() ? "missing: no attempt was gated" : gates});
    std::string bench;
    for (const auto* r : timed)
        bench += fmt::format("{}{} x{:.3f} [{:.3f}, {:.3f}] {} vs {}", bench.empty() ? "" : "; ", version_label(r->number),
                             r->overall->speedup, r->overall->ci_low, r->overall->ci_high, measure::to_string(r->overall->verdict),
                             version_label(r->vs_best));
    a.items.push_back({"bench evidence", !timed.empty(),
                       timed.empty() ? "missing: no attempt was timed against the best (all rejected before timing?)" : bench});
    // Without --bound, the profile names it: the best version's (else the latest profiled one's)
    // dominant kernel's bound with its numbers (loop/version_profile.hpp).
    std::string bound = given_bound;
    if (bound.empty()) {
        const iteration_record* src = nullptr;
        if (const auto best = best_version(records, ab_target_policy()))
            for (const auto& r : records)
                if (r.number == *best && !r.profile_bound.empty()) src = &r;
        if (src == nullptr)
            for (const auto& r : records)
                if (!r.profile_bound.empty()) src = &r;
        if (src != nullptr)
            bound = fmt::format("{} (from the {} profile of {})", src->profile_note, src->profile_status,
                                version_label(src->number));
    }
    const bool has_digit = std::any_of(bound.begin(), bound.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; });
    const bool has_name = std::any_of(bound.begin(), bound.end(), [](unsigned char ch) { return std::isalpha(ch) != 0; });
    a.items.push_back({"named bound with its number", has_digit && has_name,
                       bound.empty() ? "missing: no profile names it; give --bound 'NAME: NUMBER UNIT of LIMIT' (which "
                                       "roofline / launch / timer limit, with the number)"
                       : (has_digit && has_name) ? bound
                                                 : "'" + bound + "' does not name a bound with a number"});
    a.cleared = std::all_of(a.items.begin(), a.items.end(), [](const nogo_item& i) { return i.met; });
    return a;
}

}  // namespace kloop::loop
