// kloop measure: the early verdict — an interleaved A/B shape may stop once its verdict is settled.
//
// Responsibility: decide, at a look during an A/B, whether the samples so far already settle the
// shape's verdict (FASTER, SLOWER or SAME by the rule of ab_comparison.hpp), so the runner can
// stop timing it. A shape whose candidate is 8x faster needs tens of samples to say so, not the
// thousand its fast side takes to reach the stopping rule's plateau; that gap was most of a
// Triton iteration's A/B (docs/perf.md).
//
// The test is conservative and distribution-free, so that looking early does not make verdicts
// cheaper to get wrong (docs/measurement.md, "Early verdict"):
//   - looks only at n = first_look * 2^k samples per side (both sides have the same count after
//     every ABBA round), and only once each side has min_time_s of measurement and the stopping
//     rule's min_samples; at most max_looks looks exist below any sample cap we use;
//   - each look spends (1 - confidence) / max_looks of the error (Bonferroni over the looks), and
//     half of that per side;
//   - each side's median gets an order-statistic interval (binomial(n, 1/2), normal
//     approximation): ranks r = floor((n - z sqrt(n)) / 2) and s = ceil(1 + (n + z sqrt(n)) / 2),
//     1-based; none when r < 1 or s > n;
//   - the speedup interval is [base_lo / cand_hi, base_hi / cand_lo], judged by verdict_for().
// AMBIGUOUS is never "settled": the shape goes on. The final verdict is still kloop's bootstrap
// over every sample taken. python/kloop_worker/early_verdict.py is the Python worker's port;
// tests/data/early_verdict_cases.json holds vectors both must agree on.
#pragma once

#include <optional>
#include <span>

#include "measure/ab_comparison.hpp"

namespace kloop::measure {

struct early_verdict_config {
    bool enabled = false;
    double min_effect = 0.02;   // the A/B's verdict band
    double confidence = 0.95;   // over all looks together
    int first_look = 64;        // samples per side at the first look
    int max_looks = 12;         // 64 * 2^11 = 131072 > the stopping rule's default sample cap
    double min_time_s = 0.1;    // measurement time per side before any look
};

// An A/B's early-verdict settings: its verdict band, confidence and on/off switch, the default look
// schedule, and a time floor that never waits longer than the stopping rule's own minimum time.
[[nodiscard]] early_verdict_config early_verdict_for(const ab_config& ab, double stop_min_time_s);

// Whether n samples per side is a look (n = first_look * 2^k).
[[nodiscard]] bool is_early_verdict_look(std::size_t n, const early_verdict_config& c);

// z for one side's median interval at one look: Phi^-1(1 - a/2), a = (1 - confidence) / max_looks / 2.
[[nodiscard]] double early_verdict_z(const early_verdict_config& c);

// The verdict the samples settle (faster, slower or same), or none. Does not check the look
// schedule or the time floor (the runner does); needs equal or unequal counts alike.
[[nodiscard]] std::optional<ab_verdict> settled_verdict(std::span<const double> base, std::span<const double> cand,
                                                        const early_verdict_config& c);

}  // namespace kloop::measure
