// kloop measure: the stopping rule (Welford running moments + sliding least-squares fit).
#include "measure/stopping_rule.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace kloop::measure {

std::string to_string(stop_reason r) {
    switch (r) {
        case stop_reason::not_done: return "not_done";
        case stop_reason::converged: return "converged";
        case stop_reason::plateau: return "plateau";
        case stop_reason::time_cap: return "time_cap";
        case stop_reason::sample_cap: return "sample_cap";
    }
    return "?";
}

stop_reason stop_reason_from_string(const std::string& s) {
    for (auto r : {stop_reason::not_done, stop_reason::converged, stop_reason::plateau, stop_reason::time_cap,
                   stop_reason::sample_cap})
        if (to_string(r) == s) return r;
    throw std::invalid_argument("unknown stop reason '" + s + "'");
}

stopping_rule::stopping_rule(stopping_config config) : m_config(config) {
    if (m_config.plateau_window < 3) throw std::invalid_argument("stopping rule: plateau_window must be >= 3");
    m_hist.assign(m_config.plateau_window, 0.0);
}

void stopping_rule::add(double sample_s, double cost_s) {
    if (!std::isfinite(sample_s) || sample_s < 0.0)
        throw std::invalid_argument("stopping rule: sample must be a finite, non-negative duration");
    ++m_count;
    m_total_s += std::isfinite(cost_s) && cost_s > sample_s ? cost_s : sample_s;
    const double delta = sample_s - m_mean;
    m_mean += delta / static_cast<double>(m_count);
    m_m2 += delta * (sample_s - m_mean);
    if (m_count >= 2) {
        const double rel = get_rel_stdev();
        if (std::isfinite(rel)) push_history(rel);
    }
    m_state = evaluate();
}

double stopping_rule::get_rel_stdev() const {
    if (m_count < 2 || m_mean == 0.0) return std::numeric_limits<double>::infinity();
    const double var = m_m2 > 0.0 ? m_m2 / static_cast<double>(m_count - 1) : 0.0;
    return std::sqrt(var) / m_mean;
}

void stopping_rule::push_history(double y) {
    const std::size_t k = m_hist.size();
    if (m_hist_size < k) {
        // Filling: the new value gets x = current size.
        m_hist[(m_head + m_hist_size) % k] = y;
        m_sum_xy += static_cast<double>(m_hist_size) * y;
        m_sum_y += y;
        ++m_hist_size;
    } else {
        // Full: drop the oldest (x = 0), shift every x down by one, append at x = K - 1.
        m_sum_y -= m_hist[m_head];
        m_sum_xy -= m_sum_y;
        m_hist[m_head] = y;
        m_head = (m_head + 1) % k;
        m_sum_y += y;
        m_sum_xy += static_cast<double>(k - 1) * y;
    }
    if (++m_since_recompute >= k) recompute_sums();
}

void stopping_rule::recompute_sums() {
    const std::size_t k = m_hist.size();
    m_sum_y = 0.0;
    m_sum_xy = 0.0;
    for (std::size_t x = 0; x < m_hist_size; ++x) {
        const double y = m_hist[(m_head + x) % k];
        m_sum_y += y;
        m_sum_xy += static_cast<double>(x) * y;
    }
    m_since_recompute = 0;
}

double stopping_rule::get_rel_stdev_drift() const {
    const std::size_t k = m_hist.size();
    if (m_hist_size < k) return std::numeric_limits<double>::infinity();
    const double kk = static_cast<double>(k);
    const double sx = kk * (kk - 1.0) / 2.0;
    const double sxx = (kk - 1.0) * kk * (2.0 * kk - 1.0) / 6.0;
    const double slope = (kk * m_sum_xy - sx * m_sum_y) / (kk * sxx - sx * sx);
    const double level = m_sum_y / kk;
    if (level <= 0.0) return slope == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
    return std::fabs(slope) * (kk - 1.0) / level;
}

stop_reason stopping_rule::evaluate() const {
    const bool minima = m_count >= m_config.min_samples && m_total_s >= m_config.min_time_s;
    if (minima) {
        if (get_rel_stdev() <= m_config.target_rel_stdev) return stop_reason::converged;
        if (get_rel_stdev_drift() <= m_config.plateau_max_drift) return stop_reason::plateau;
    }
    if (m_count >= m_config.max_samples) return stop_reason::sample_cap;
    if (m_total_s >= m_config.max_time_s) return stop_reason::time_cap;
    return stop_reason::not_done;
}

}  // namespace kloop::measure
