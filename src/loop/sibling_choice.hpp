// kloop loop: which sibling of a `kloop run --parallel` round is promoted.
//
// Responsibility: a round's candidates (its siblings) were each raced against the same best, in an
// A/B of their own, each on one device. Several may beat that best. The eligible ones (under the
// A/B target policy of loop/ranking: positive, a full green gate, a successful bench, not suspect)
// compete by the overall speedup of their own A/B — the rule `kloop tune` uses for a batch —
// and a tie goes to the earlier iteration. Every other eligible sibling stays positive (its
// change did beat the best) but is marked outpaced_by the winner, its reason saying so, so that
// no ranking of medians from separate runs can promote it later. The speedups compared are
// ratios each measured side by side against the same base with the same settings, not times
// from different runs.
#pragma once

#include <optional>
#include <vector>

#include "loop/record/iteration_record.hpp"

namespace kloop::loop {

// Marks the outpaced siblings in place; returns the winner's iteration number, nullopt when no
// sibling is eligible.
std::optional<int> choose_sibling(std::vector<iteration_record>& siblings);

}  // namespace kloop::loop
