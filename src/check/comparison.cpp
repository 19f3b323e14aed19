// kloop check: output comparison metrics (chunked, in parallel) and their JSON form.
#include "check/comparison.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/element_access.hpp"
#include "core/thread_pool.hpp"

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
    // Another partial sum: its running sum, then its compensation, each added compensated.
    void add(const compensated_sum& other) {
        add(other.sum);
        add(other.c);
    }
    [[nodiscard]] double get() const { return sum + c; }
};

// The metrics of one chunk, before the global ones are derived.
struct chunk_metrics {
    double max_abs = 0;
    double max_rel = 0;
    compensated_sum sum_diff2;
    compensated_sum sum_ref2;
    std::int64_t mismatches = 0;
    std::int64_t first_bad = -1;
    std::int64_t nan_count = 0;
    std::int64_t inf_count = 0;
    std::int64_t first_nonfinite = -1;
    std::int64_t ref_nonfinite = 0;
};

// |a - b| of two integers as a double, the difference taken exactly (as uint64: no signed
// overflow for any two int64 values).
template <class I>
double integer_distance(I a, I b) {
    const auto x = static_cast<std::int64_t>(a);
    const auto y = static_cast<std::int64_t>(b);
    const std::uint64_t d = x >= y ? static_cast<std::uint64_t>(x) - static_cast<std::uint64_t>(y)
                                   : static_cast<std::uint64_t>(y) - static_cast<std::uint64_t>(x);
    return static_cast<double>(d);
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

template <kloop::dtype T>
void compare_chunk(const void* out, const void* ref, std::int64_t begin, std::int64_t end, bool elementwise,
                   double atol, double rtol, chunk_metrics& result) {
    using codec = element_codec<T>;
    constexpr bool integer = T == kloop::dtype::i32 || T == kloop::dtype::i64;
    // Locals, written back once: accumulators behind a reference would be stored to memory on
    // every element (the compiler cannot prove the buffers do not alias them).
    chunk_metrics m;
    for (std::int64_t i = begin; i < end; ++i) {
        const auto o_raw = load_raw<T>(out, i);
        const auto r_raw = load_raw<T>(ref, i);
        const double o = codec::decode(o_raw);
        const double r = codec::decode(r_raw);
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
            if constexpr (integer) diff = integer_distance(o_raw, r_raw);
            else diff = std::fabs(o - r);
            const double ar = std::fabs(r);
            if (diff > m.max_abs) m.max_abs = diff;
            if (ar != 0.0 && diff / ar > m.max_rel) m.max_rel = diff / ar;
            m.sum_diff2.add(diff * diff);
            m.sum_ref2.add(r * r);
            if (elementwise && diff > atol + rtol * ar) bad = true;
        }
        if (bad) {
            ++m.mismatches;
            if (m.first_bad < 0) m.first_bad = i;
        }
    }
    result = m;
}

}  // namespace

compare_metrics compare_outputs(kloop::dtype t, const void* out, const void* ref, std::int64_t n,
                                const spec::tolerance& tol) {
    return compare_outputs(t, out, ref, n, tol, thread_pool::shared());
}

compare_metrics compare_outputs(kloop::dtype t, const void* out, const void* ref, std::int64_t n,
                                const spec::tolerance& tol, thread_pool& pool) {
    const bool elementwise = tol.has_elementwise();
    const double atol = tol.atol.value_or(0.0);
    const double rtol = tol.rtol.value_or(0.0);

    // Per-chunk metrics in parallel, combined below in chunk order: the result depends on the
    // chunking (fixed by n), never on the thread count.
    std::vector<chunk_metrics> parts(static_cast<std::size_t>(chunk_count(n)));
    visit_dtype(t, [&](auto tag) {
        constexpr kloop::dtype T = decltype(tag)::value;
        parallel_for_chunks(pool, n, [&](std::int64_t chunk, std::int64_t begin, std::int64_t end) {
            compare_chunk<T>(out, ref, begin, end, elementwise, atol, rtol, parts[static_cast<std::size_t>(chunk)]);
        });
    });

    compare_metrics m;
    m.n = n;
    compensated_sum sum_diff2;
    compensated_sum sum_ref2;
    for (const auto& p : parts) {
        m.max_abs = std::max(m.max_abs, p.max_abs);
        m.max_rel = std::max(m.max_rel, p.max_rel);
        sum_diff2.add(p.sum_diff2);
        sum_ref2.add(p.sum_ref2);
        m.mismatches += p.mismatches;
        m.nan_count += p.nan_count;
        m.inf_count += p.inf_count;
        m.ref_nonfinite += p.ref_nonfinite;
        // Chunks are in index order: the first chunk with one holds the global first.
        if (m.first_bad < 0) m.first_bad = p.first_bad;
        if (m.first_nonfinite < 0) m.first_nonfinite = p.first_nonfinite;
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
