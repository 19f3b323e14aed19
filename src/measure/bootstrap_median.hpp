// kloop measure: one bootstrap replicate of a sample's median, at a cost independent of its size.
//
// Responsibility: draw the median of a bootstrap resample — n values drawn with replacement from
// a sample of n — without drawing the n values. Drawing them cost O(n) per replicate: an A/B
// shape of 50 000 samples a side (a 100 µs call timed for 5 s) took seconds of kloop's CPU for its
// 2000 replicates, per shape and again for the geomean.
//
// Exact in distribution. Sort the sample: x[0] <= ... <= x[n-1]. A resample is x[floor(n U_i)]
// for n independent uniforms U_i on [0, 1), and floor(n ·) does not decrease, so its k-th smallest
// value is x[floor(n U_(k))], U_(k) the k-th smallest of the uniforms, which is Beta(k, n - k + 1).
// For an even n the median also needs the next one: given U_(k) = u, the other n - k uniforms are
// uniform on (u, 1) and their least is u + (1 - u) (1 - V^(1/(n-k))), V uniform on (0, 1].
// Beta(a, b) = G_a / (G_a + G_b) with Gamma draws by Marsaglia & Tsang (2000, a >= 1 here) on
// rng's portable normal and uniform and kloop::portable's log and exp; this file is compiled
// without floating-point contraction, so replicates are bit-identical on every machine, as all of
// kloop's randomness is (core/rng.hpp).
#pragma once

#include <span>

#include "core/rng.hpp"

namespace kloop::measure {

// Gamma(a, 1) for a >= 1.
[[nodiscard]] double gamma_draw(double a, rng& r);

// Beta(a, b) for a, b >= 1.
[[nodiscard]] double beta_draw(double a, double b, rng& r);

// The median of one bootstrap resample of `sorted` (ascending, non-empty): for an even size the
// mean of the two middle values, as measure::median. Three to four Gamma draws, whatever the size.
[[nodiscard]] double bootstrap_median(std::span<const double> sorted, rng& r);

}  // namespace kloop::measure
