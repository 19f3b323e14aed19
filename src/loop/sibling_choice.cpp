// kloop loop: the promoted sibling of a parallel round (see sibling_choice.hpp).
#include "loop/sibling_choice.hpp"

#include <fmt/format.h>

#include "loop/ranking.hpp"

namespace kloop::loop {

std::optional<int> choose_sibling(std::vector<iteration_record>& siblings) {
    const iteration_record* winner = nullptr;
    for (const auto& r : siblings) {
        if (!ineligibility(r, ab_target_policy()).empty() || !r.overall) continue;
        if (winner == nullptr || r.overall->speedup > winner->overall->speedup ||
            (r.overall->speedup == winner->overall->speedup && r.number < winner->number))
            winner = &r;
    }
    if (winner == nullptr) return std::nullopt;
    const int number = winner->number;
    const double speedup = winner->overall->speedup;
    for (auto& r : siblings) {
        if (r.number == number || !ineligibility(r, ab_target_policy()).empty() || !r.overall) continue;
        r.outpaced_by = number;
        r.reason += fmt::format("; not promoted: its sibling {} beat the same best by more (x{:.3f} against x{:.3f})",
                                version_label(number), speedup, r.overall->speedup);
    }
    return number;
}

}  // namespace kloop::loop
