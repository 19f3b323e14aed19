// kloop runner: when a timing loop reports its progress.
//
// Responsibility: pace the runner's `progress` events (runner/events.hpp) so the live display
// sees a timed item move without the channel growing with every sample: due() is true at most
// once per k_progress_interval_s of the checker's clock, never on the first call. The event is
// built from the stopping rule's own state (progress_of).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <optional>

#include "measure/stopping_rule.hpp"
#include "runner/events.hpp"

namespace kloop::runner {

class progress_clock {
public:
    [[nodiscard]] bool due() {
        const auto now = std::chrono::steady_clock::now();
        if (std::chrono::duration<double>(now - m_last).count() < k_progress_interval_s) return false;
        m_last = now;
        return true;
    }

private:
    std::chrono::steady_clock::time_point m_last = std::chrono::steady_clock::now();
};

// The progress of one timed series (a bench item), or of an A/B's two (the side with fewer
// samples, the wider spread, the time of both).
[[nodiscard]] inline progress_event progress_of(int id, const measure::stopping_rule& a,
                                                const measure::stopping_rule* b = nullptr) {
    progress_event p;
    p.id = id;
    p.samples = static_cast<int>(b ? std::min(a.get_count(), b->get_count()) : a.get_count());
    p.time_s = a.get_total_time_s() + (b ? b->get_total_time_s() : 0.0);
    double spread = a.get_rel_stdev();
    if (b) spread = std::max(spread, b->get_rel_stdev());
    if (std::isfinite(spread)) p.rel_stdev = spread;
    p.target_rel_stdev = a.get_config().target_rel_stdev;
    return p;
}

}  // namespace kloop::runner
