// kloop measure: the noise floor of A against A (see noise_floor.hpp).
#include "measure/noise_floor.hpp"

#include <algorithm>
#include <cmath>

#include "measure/statistics.hpp"

namespace kloop::measure {

namespace {

double median_or_zero(const std::vector<double>& v) { return v.empty() ? 0.0 : median_of(v); }

std::vector<double> abs_logs(const std::vector<double>& speedups) {
    std::vector<double> out;
    out.reserve(speedups.size());
    for (double s : speedups) out.push_back(std::fabs(std::log(s)));
    return out;
}

}  // namespace

void verdict_counts::add(ab_verdict v) {
    switch (v) {
        case ab_verdict::faster: ++faster; break;
        case ab_verdict::slower: ++slower; break;
        case ab_verdict::same: ++same; break;
        case ab_verdict::ambiguous: ++ambiguous; break;
    }
}

double shape_noise::median_abs_log_speedup() const { return median_or_zero(abs_logs(speedups)); }

double shape_noise::noise_floor() const { return std::expm1(median_abs_log_speedup()); }

double shape_noise::max_deviation() const {
    const auto v = abs_logs(speedups);
    return std::expm1(v.empty() ? 0.0 : *std::max_element(v.begin(), v.end()));
}

double shape_noise::median_half_width() const { return median_or_zero(half_widths); }

double shape_noise::false_verdict_rate() const {
    const int n = verdicts.total();
    return n ? static_cast<double>(verdicts.false_ones()) / n : 0.0;
}

double noise_summary::false_verdict_rate() const {
    return shape_verdicts ? static_cast<double>(false_verdicts) / shape_verdicts : 0.0;
}

bool noise_summary::within_allowed() const {
    return shape_verdicts > 0 && false_verdict_rate() <= allowed_false_verdict_rate;
}

noise_summary summarize_noise(const std::vector<noise_run>& runs) {
    noise_summary s;
    for (const auto& r : runs) {
        if (r.overall) s.geomean_verdicts.add(r.overall->verdict);
        for (std::size_t k = 0; k < r.shapes.size(); ++k) {
            const auto& shape = r.shapes[k];
            if (s.shapes.size() <= k) s.shapes.push_back(shape_noise{shape.mode, shape.shape, {}, {}, {}, 0});
            auto& n = s.shapes[k];
            if (!shape.verdict) {
                ++n.failed;
                continue;
            }
            n.speedups.push_back(shape.verdict->speedup);
            n.half_widths.push_back((shape.verdict->ci_high - shape.verdict->ci_low) / 2);
            n.verdicts.add(shape.verdict->verdict);
        }
    }
    for (const auto& n : s.shapes) {
        s.shape_verdicts += n.verdicts.total();
        s.false_verdicts += n.verdicts.false_ones();
    }
    return s;
}

}  // namespace kloop::measure
