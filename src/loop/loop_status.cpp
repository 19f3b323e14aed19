// kloop loop: status and stop rules (see loop_status.hpp).
#include "loop/loop_status.hpp"

#include <fmt/format.h>

#include "loop/ranking.hpp"

namespace kloop::loop {

std::string to_string(next_step s) {
    switch (s) {
        case next_step::iterate: return "iterate";
        case next_step::stall: return "stall";
        case next_step::stop_cap: return "stop_cap";
        case next_step::stop_target: return "stop_target";
    }
    return "?";
}

int iterations_since_improvement(const std::vector<iteration_record>& records) {
    int since = 0;
    for (const auto& r : records) {
        if (r.number == 0) continue;
        if (r.status == iteration_status::positive) since = 0;
        else ++since;
    }
    return since;
}

loop_status compute_status(const std::vector<iteration_record>& records, int max_iterations,
                           std::optional<double> target_speedup) {
    loop_status st;
    st.max_iterations = max_iterations;
    for (const auto& r : records) {
        if (r.number == 0) {
            st.baseline_geomean_median_s = geomean_median_s(r);
            continue;
        }
        ++st.iterations;
        if (r.status == iteration_status::positive) ++st.positive;
        else if (r.status == iteration_status::negative) ++st.negative;
        else if (r.status == iteration_status::rejected) ++st.rejected;
    }
    st.best = best_version(records, ab_target_policy());
    if (st.best)
        for (const auto& r : records)
            if (r.number == *st.best) st.best_geomean_median_s = geomean_median_s(r);
    if (st.best_geomean_median_s && st.baseline_geomean_median_s && *st.best_geomean_median_s > 0)
        st.estimated_speedup = *st.baseline_geomean_median_s / *st.best_geomean_median_s;
    st.since_improvement = iterations_since_improvement(records);

    if (st.iterations >= max_iterations) {
        st.next = next_step::stop_cap;
        st.next_text = fmt::format("stop: the iteration cap ({}) is reached. Run `kloop report` for the promotion verdict "
                                   "(or `kloop nogo` if there is no win to promote)",
                                   max_iterations);
    } else if (target_speedup && st.estimated_speedup && *st.estimated_speedup >= *target_speedup && st.best != 0) {
        st.next = next_step::stop_target;
        st.next_text = fmt::format("stop: the target x{:.2f} looks reached (estimate x{:.2f} from separate runs). Run "
                                   "`kloop report`, which measures the best against the baseline side by side",
                                   *target_speedup, *st.estimated_speedup);
    } else if (st.since_improvement >= stall_after) {
        st.next = next_step::stall;
        st.next_text = fmt::format("stall: {} iterations without improvement. Re-profile the best version, re-read "
                                   "OPT_LOG.md for the axes already tried, and look up known techniques for this op "
                                   "family before choosing a new direction",
                                   st.since_improvement);
    } else {
        st.next = next_step::iterate;
        st.next_text = fmt::format("iterate: make one change, write optimization_proposal.md (Direction, Expected, "
                                   "## Strategy tags), run `kloop iterate` ({} of {} iterations left)",
                                   max_iterations - st.iterations, max_iterations);
    }
    return st;
}

}  // namespace kloop::loop
