// kloop loop/record: the profile facts a record keeps (see profile_facts.hpp).
#include "loop/record/profile_facts.hpp"

#include <optional>

namespace kloop::loop {

const std::vector<std::string>& profile_fact_names() {
    static const std::vector<std::string> names = {"dram_pct_of_peak",  "memory_pct_of_peak", "sm_pct_of_peak",
                                                   "achieved_occupancy_pct", "l2_hit_rate_pct", "pct_of_floor",
                                                   "reread_factor"};
    return names;
}

std::map<std::string, double> profile_facts_of(const eval::profile_step_result& r) {
    std::map<std::string, double> facts;
    if (!r.headline_entry || *r.headline_entry >= r.entries.size()) return facts;
    const auto& entry = r.entries[*r.headline_entry];
    if (!entry.summary || !entry.summary->dominant) return facts;
    const auto& s = *entry.summary;
    const auto& k = s.kernels[*s.dominant].facts;
    auto put = [&](const char* name, const std::optional<double>& v) {
        if (v) facts[name] = *v;
    };
    put("dram_pct_of_peak", k.dram_throughput_pct);
    put("memory_pct_of_peak", k.memory_throughput_pct);
    put("sm_pct_of_peak", k.sm_throughput_pct);
    put("achieved_occupancy_pct", k.achieved_occupancy_pct);
    put("l2_hit_rate_pct", k.l2_hit_rate_pct);
    if (s.roofline) {
        put("pct_of_floor", s.roofline->measured_pct_of_floor);
        put("reread_factor", s.roofline->reread_factor);
    }
    return facts;
}

}  // namespace kloop::loop
