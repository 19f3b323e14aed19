// kloop loop/record: the named numbers of a version's Nsight Compute profile that its record keeps.
//
// Responsibility: pick, from the profile step's result, the few facts a proposal can predict and
// the loop can score (loop/record/prediction) — all of the headline capture (the first target's
// dominant kernel, from its fullest parsed capture: the one the profile note describes):
//   dram_pct_of_peak        DRAM throughput, % of peak sustained (gpu__dram_throughput)
//   memory_pct_of_peak      memory-system throughput, % of peak (gpu__compute_memory_throughput)
//   sm_pct_of_peak          SM throughput, % of peak (sm__throughput)
//   achieved_occupancy_pct  achieved occupancy, % of the warps an SM holds (sm__warps_active)
//   l2_hit_rate_pct         L2 sector hit rate, %
//   pct_of_floor            the roofline floor as % of the measured time (100 = at the floor;
//                           for a memory-bound op, % of the memory floor)
//   reread_factor           measured DRAM bytes / the spec's bytes of one call (1 = read once)
// A fact ncu did not report is absent, never invented. Pure: tested on synthetic results.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "eval/record/profile_result.hpp"

namespace kloop::loop {

// The names above, in that order.
[[nodiscard]] const std::vector<std::string>& profile_fact_names();

// The facts of the headline capture (profile_step_result::headline_entry); empty without one.
[[nodiscard]] std::map<std::string, double> profile_facts_of(const eval::profile_step_result& r);

}  // namespace kloop::loop
