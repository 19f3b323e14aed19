// kloop loop: `kloop nogo` — the bar a "no win to promote" verdict must clear.
//
// Responsibility: a no-go is a result, not an unfinished loop, only with all five pieces of
// evidence (seeds/fla-optimization-loop.md §3):
//   1. a recorded baseline number (v0 with a successful bench);
//   2. at least one reasoned candidate attempt (an iteration whose proposal states a
//      direction and a prediction);
//   3. the gate status of the attempts;
//   4. bench evidence (an attempt timed against the best, with its A/B interval);
//   5. a named active bound or blocker with its number ("DRAM bandwidth: 410 of 450 GB/s",
//      "launch overhead: 4.1 us of 4.5 us") — given with --bound, else taken from the profile
//      of the best version (its dominant kernel's bound and numbers), kept in nogo.json.
// assess_nogo() is pure; the command prints what is present and what is missing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "loop/record/iteration_record.hpp"

namespace kloop::loop {

struct nogo_item {
    std::string name;
    bool met = false;
    std::string evidence;    // what was found, or what is missing
};

struct nogo_assessment {
    std::vector<nogo_item> items;
    bool cleared = false;
    std::optional<int> positive;   // a positive version exists: this is not a no-go
};

// `bound` (--bound; empty: from the profiles) must name something and carry a number (a digit).
[[nodiscard]] nogo_assessment assess_nogo(const std::vector<iteration_record>& records, const std::string& bound);

}  // namespace kloop::loop
