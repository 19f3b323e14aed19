// kloop measure: when to stop taking timing samples for one shape.
//
// Responsibility: the stopping rule of docs/measurement.md ("Stopping rule"), fed one sample
// at a time from inside the timing loop, so add() is O(1) amortised and allocation-free after
// construction. In the spirit of NVBench's stdrel criterion:
//   - rel_stdev = sample stdev / mean of all samples so far (Welford's running update);
//   - time is measurement time: each sample counts the wall time it took to take (the cache
//     flush, the stream hold, the synchronisation and clock reads around the timed call), which
//     add(sample, cost) receives; add(sample) counts the sample itself. On a GPU that overhead
//     is ~0.3 ms per sample, 20x a 16 us kernel: a budget in kernel time would cost minutes of
//     wall time per shape, while the median's precision depends on the sample count;
//   - nothing but a cap stops before BOTH min_samples samples AND min_time_s of measurement
//     time;
//   - converged: rel_stdev <= target_rel_stdev;
//   - plateau: rel_stdev has stopped moving. After every sample (n >= 2) rel_stdev is appended
//     to a history; over the last plateau_window values y_0..y_{K-1} (x = 0..K-1) a least-squares
//     line y = a + b x is fitted; plateau when |b| * (K - 1) <= plateau_max_drift * mean(y),
//     i.e. the fitted change across the window is within plateau_max_drift (2 %) of its level.
//     A noisy kernel's rel_stdev settles at its true coefficient of variation instead of
//     falling to the target; more samples would not help, so stop. The fit's sums are slid in
//     O(1) and recomputed exactly from the ring buffer every K samples to bound rounding drift.
//   - caps (checked after convergence/plateau, always honoured): sample_cap when count >=
//     max_samples, time_cap when total time >= max_time_s.
// Once done, more add() calls keep updating the state (the caller should stop).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kloop::measure {

struct stopping_config {
    std::size_t min_samples = 10;
    double min_time_s = 0.5;
    double target_rel_stdev = 0.005;
    double max_time_s = 15.0;
    std::size_t max_samples = 100000;
    // additions: the plateau test (see the header comment)
    std::size_t plateau_window = 64;   // K, >= 3
    double plateau_max_drift = 0.02;   // fitted change across the window / its mean level
};

enum class stop_reason { not_done, converged, plateau, time_cap, sample_cap };

[[nodiscard]] std::string to_string(stop_reason r);  // "not_done", "converged", ...
[[nodiscard]] stop_reason stop_reason_from_string(const std::string& s);  // throws std::invalid_argument

class stopping_rule {
public:
    // Throws std::invalid_argument when plateau_window < 3.
    explicit stopping_rule(stopping_config config);

    // One sample's duration in seconds; throws std::invalid_argument if negative or non-finite.
    // `cost_s`: the wall time taking it cost (>= the sample; a smaller value counts the sample).
    void add(double sample_s, double cost_s);
    void add(double sample_s) { add(sample_s, sample_s); }

    [[nodiscard]] stop_reason get_state() const { return m_state; }
    [[nodiscard]] bool is_done() const { return m_state != stop_reason::not_done; }
    // Measurement time so far: the sum of the samples' costs.
    [[nodiscard]] double get_total_time_s() const { return m_total_s; }
    [[nodiscard]] std::size_t get_count() const { return m_count; }
    // +inf with fewer than two samples or a zero mean.
    [[nodiscard]] double get_rel_stdev() const;
    // |b| (K - 1) / mean(y) of the plateau fit; +inf until the window is full.
    [[nodiscard]] double get_rel_stdev_drift() const;
    [[nodiscard]] const stopping_config& get_config() const { return m_config; }

private:
    void push_history(double y);
    void recompute_sums();
    [[nodiscard]] stop_reason evaluate() const;

    stopping_config m_config;
    stop_reason m_state = stop_reason::not_done;
    std::size_t m_count = 0;
    double m_total_s = 0.0;
    double m_mean = 0.0;
    double m_m2 = 0.0;
    // ring buffer of the last K rel_stdev values; m_head is the oldest when full
    std::vector<double> m_hist;
    std::size_t m_hist_size = 0;
    std::size_t m_head = 0;
    std::size_t m_since_recompute = 0;
    double m_sum_y = 0.0;   // sum y_x
    double m_sum_xy = 0.0;  // sum x * y_x, x = 0 for the oldest
};

}  // namespace kloop::measure
