// kloop check: output comparison metrics and their JSON form.
#include "check/comparison.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "check/element_access.hpp"

namespace kloop::check {

namespace {

// Neumaier's compensated sum: error independent of n to first order.
struct compensated_sum {
    double sum = 0.0;
    double c = 0.0;
    void add(double x) {
        const double t = sum + x;
        if (std::fabs(sum) >= std::fabs(x)) c += (sum - t) + x;
        else c += (x - t) + sum;
        sum = t;
    }
    [[nodiscard]] double get() const { return sum + c; }
};

std::int64_t load_int(kloop::dtype t, const void* base, std::int64_t i) {
    if (t == dtype::i32) {
        std::int32_t v;
        std::memcpy(&v, static_cast<const unsigned char*>(base) + i * 4, 4);
        return v;
    }
    std::int64_t v;
    std::memcpy(&v, static_cast<const unsigned char*>(base) + i * 8, 8);
    return v;
}

bool same_nonfinite(double o, double r) {
    if (std::isnan(r)) return std::isnan(o);
    return o == r;  // r is +-Inf
}

nlohmann::json encode(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
}

double decode(const nlohmann::json& j) {
    if (j.is_string()) {
        const auto s = j.get<std::string>();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
        throw std::invalid_argument("compare_metrics: bad number '" + s + "'");
    }
    return j.get<double>();
}

}  // namespace

compare_metrics compare_outputs(kloop::dtype t, const void* out, const void* ref, std::int64_t n,
                                const spec::tolerance& tol) {
    compare_metrics m;
    m.n = n;
    const bool elementwise = tol.has_elementwise();
    const double atol = tol.atol.value_or(0.0);
    const double rtol = tol.rtol.value_or(0.0);
    const bool integer = !is_floating(t);
    compensated_sum sum_diff2;
    compensated_sum sum_ref2;

    for (std::int64_t i = 0; i < n; ++i) {
        const double o = load_element(t, out, i);
        const double r = load_element(t, ref, i);
        const bool o_finite = std::isfinite(o);
        const bool r_finite = std::isfinite(r);
        if (!o_finite) {
            if (std::isnan(o)) ++m.nan_count;
            else ++m.inf_count;
            if (m.first_nonfinite < 0) m.first_nonfinite = i;
        }
        if (!r_finite) ++m.ref_nonfinite;

        bool bad = false;
        if (!r_finite) {
            bad = !same_nonfinite(o, r);
        } else if (!o_finite) {
            bad = true;
        } else {
            double diff = 0.0;
            if (integer) {
                // |a - b| as uint64: exact for any two int64 values (no signed overflow).
                const std::int64_t a = load_int(t, out, i);
                const std::int64_t b = load_int(t, ref, i);
                const std::uint64_t d = a >= b ? static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b)
                                               : static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a);
                diff = static_cast<double>(d);
            } else {
                diff = std::fabs(o - r);
            }
            const double ar = std::fabs(r);
            if (diff > m.max_abs) m.max_abs = diff;
            if (ar != 0.0 && diff / ar > m.max_rel) m.max_rel = diff / ar;
            sum_diff2.add(diff * diff);
            sum_ref2.add(r * r);
            if (elementwise && diff > atol + rtol * ar) bad = true;
        }
        if (bad) {
            ++m.mismatches;
            if (m.first_bad < 0) m.first_bad = i;
        }
    }

    const double d2 = sum_diff2.get();
    const double r2 = sum_ref2.get();
    if (r2 == 0.0) m.rel_rms = d2 == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
    else m.rel_rms = std::sqrt(d2 / r2);
    return m;
}

void to_json(nlohmann::json& j, const compare_metrics& m) {
    j = nlohmann::json{{"n", m.n},
                       {"max_abs", encode(m.max_abs)},
                       {"max_rel", encode(m.max_rel)},
                       {"rel_rms", encode(m.rel_rms)},
                       {"mismatches", m.mismatches},
                       {"first_bad", m.first_bad},
                       {"nan_count", m.nan_count},
                       {"inf_count", m.inf_count},
                       {"first_nonfinite", m.first_nonfinite},
                       {"ref_nonfinite", m.ref_nonfinite}};
}

void from_json(const nlohmann::json& j, compare_metrics& m) {
    m = compare_metrics{};
    m.n = j.at("n").get<std::int64_t>();
    m.max_abs = decode(j.at("max_abs"));
    m.max_rel = decode(j.at("max_rel"));
    m.rel_rms = decode(j.at("rel_rms"));
    m.mismatches = j.at("mismatches").get<std::int64_t>();
    m.first_bad = j.at("first_bad").get<std::int64_t>();
    m.nan_count = j.at("nan_count").get<std::int64_t>();
    m.inf_count = j.at("inf_count").get<std::int64_t>();
    if (j.contains("first_nonfinite")) m.first_nonfinite = j.at("first_nonfinite").get<std::int64_t>();
    if (j.contains("ref_nonfinite")) m.ref_nonfinite = j.at("ref_nonfinite").get<std::int64_t>();
}

}  // namespace kloop::check
