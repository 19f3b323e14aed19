// kloop check: tolerance verdicts and index formatting.
#include "check/tolerance_judge.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kloop::check {

namespace {

std::int64_t product(const std::vector<std::int64_t>& shape) {
    std::int64_t p = 1;
    for (std::int64_t d : shape) p *= d;
    return p;
}

std::string position(std::int64_t flat, const std::vector<std::int64_t>& shape, std::int64_t n) {
    if (flat >= 0 && product(shape) == n && flat < n) return format_index(unflatten(flat, shape));
    return fmt::format("[{}]", flat);
}

std::string bounds_text(const spec::tolerance& tol) {
    std::string s;
    auto add = [&](const char* name, const std::optional<double>& v) {
        if (!v) return;
        if (!s.empty()) s += ' ';
        s += fmt::format("{}={:g}", name, *v);
    };
    add("atol", tol.atol);
    add("rtol", tol.rtol);
    add("rel_rms", tol.rel_rms);
    return s;
}

std::string elementwise_text(const spec::tolerance& tol) {
    std::string s;
    if (tol.atol) s += fmt::format("atol={:g}", *tol.atol);
    if (tol.rtol) s += fmt::format("{}rtol={:g}", s.empty() ? "" : " ", *tol.rtol);
    return s;
}

}  // namespace

std::vector<std::int64_t> unflatten(std::int64_t flat, const std::vector<std::int64_t>& shape) {
    const std::int64_t n = product(shape);
    if (flat < 0 || flat >= n)
        throw std::out_of_range(fmt::format("flat index {} outside a shape of {} elements", flat, n));
    std::vector<std::int64_t> index(shape.size(), 0);
    for (std::size_t k = shape.size(); k-- > 0;) {
        index[k] = flat % shape[k];
        flat /= shape[k];
    }
    return index;
}

std::string format_index(const std::vector<std::int64_t>& index) {
    return fmt::format("[{}]", fmt::join(index, ", "));
}

judgement judge(const compare_metrics& m, const spec::tolerance& tol, const std::vector<std::int64_t>& shape) {
    std::vector<std::string> failures;
    if (m.nan_count > 0 || m.inf_count > 0)
        failures.push_back(fmt::format("{} NaN, {} Inf in output (first at {})", m.nan_count, m.inf_count,
                                       position(m.first_nonfinite, shape, m.n)));
    if (m.ref_nonfinite > 0 && m.mismatches > 0 && m.nan_count == 0 && m.inf_count == 0)
        failures.push_back(fmt::format("reference has {} non-finite values (first mismatch at {})", m.ref_nonfinite,
                                       position(m.first_bad, shape, m.n)));
    if (tol.has_elementwise() && m.mismatches > 0 && m.nan_count == 0 && m.inf_count == 0 && m.ref_nonfinite == 0)
        failures.push_back(fmt::format("{} of {} elements beyond {} (first at {}; max_abs {:.3g})", m.mismatches, m.n,
                                       elementwise_text(tol), position(m.first_bad, shape, m.n), m.max_abs));
    if (tol.rel_rms && !(m.rel_rms <= *tol.rel_rms))
        failures.push_back(fmt::format("rel_rms {:.2e} > {:.2e}", m.rel_rms, *tol.rel_rms));
    if (!tol.has_elementwise() && !tol.rel_rms) failures.emplace_back("tolerance gives no bound");

    if (!failures.empty()) return {false, fmt::format("{}", fmt::join(failures, "; "))};
    return {true, fmt::format("max_abs {:.2g}, max_rel {:.2g}, rel_rms {:.2g} within {}", m.max_abs, m.max_rel,
                              m.rel_rms, bounds_text(tol))};
}

}  // namespace kloop::check
