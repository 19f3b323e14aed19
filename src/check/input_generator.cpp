// kloop check: input generation for every init_kind (chunked streams, see the header).
#include "check/input_generator.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "check/element_access.hpp"
#include "core/rng.hpp"
#include "core/thread_pool.hpp"

namespace kloop::check {

namespace {

[[noreturn]] void fail(const spec::initializer& init, const std::string& why) {
    const std::string name = init.text.empty() ? spec::to_string(init.kind) : init.text;
    throw std::invalid_argument("init '" + name + "': " + why);
}

// Picks k distinct integers from {1, ..., n} (Floyd's algorithm: k draws, no rejection loop) and
// returns them sorted. The draws do not depend on the container, so results are reproducible.
std::vector<std::int64_t> sample_distinct(rng& r, std::int64_t n, std::int64_t k) {
    std::vector<std::int64_t> out;
    out.reserve(static_cast<std::size_t>(k));
    const bool dense = n <= 8 * k;
    std::vector<char> mark(dense ? static_cast<std::size_t>(n) + 1 : 0, 0);
    std::unordered_set<std::int64_t> seen;
    auto contains = [&](std::int64_t v) { return dense ? mark[static_cast<std::size_t>(v)] != 0 : seen.count(v) != 0; };
    auto insert = [&](std::int64_t v) {
        if (dense) mark[static_cast<std::size_t>(v)] = 1;
        else seen.insert(v);
        out.push_back(v);
    };
    for (std::int64_t j = n - k + 1; j <= n; ++j) {
        const auto t = 1 + static_cast<std::int64_t>(r.next_below(static_cast<std::uint64_t>(j)));
        insert(contains(t) ? j : t);
    }
    std::sort(out.begin(), out.end());
    return out;
}

void fill_cu_seqlens(const spec::initializer& init, kloop::dtype t, void* data, std::int64_t n_elems,
                     const spec::dim_env& dims, rng& r) {
    if (n_elems < 1) fail(init, "cu_seqlens needs a tensor of at least 1 element (n+1 offsets)");
    const std::int64_t n = n_elems - 1;
    const std::int64_t total = init.total.eval(dims);
    if (total < n)
        fail(init, "total " + std::to_string(total) + " is smaller than the number of sequences " +
                       std::to_string(n) + " (every sequence needs a positive length)");
    if (n == 0 && total != 0) fail(init, "one offset cannot end at total " + std::to_string(total));
    if (round_to_dtype(t, static_cast<double>(total)) != static_cast<double>(total))
        fail(init, "total " + std::to_string(total) + " is not representable in " + std::string(to_string(t)));
    store_element(t, data, 0, 0.0);
    if (n == 0) return;
    const auto cuts = sample_distinct(r, total - 1, n - 1);
    for (std::int64_t i = 1; i < n; ++i) store_element(t, data, i, static_cast<double>(cuts[static_cast<std::size_t>(i - 1)]));
    store_element(t, data, n, static_cast<double>(total));
}

}  // namespace

std::vector<double> int_edge_values(double lo, double hi) {
    std::vector<double> out;
    for (const double v : {lo, lo + 1.0, -1.0, 0.0, 1.0, hi - 1.0, hi})
        if (v >= lo && v <= hi && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
    return out;
}

double log_sigmoid(double x) {
    // log(sigmoid(x)) = -log(1 + e^-x) = -softplus(-x); softplus(y) = max(y, 0) + log1p(e^-|y|).
    const double y = -x;
    return -((y > 0.0 ? y : 0.0) + portable::log1p(portable::exp(-std::fabs(y))));
}

namespace {

// Values are produced in double into a small buffer, then rounded into the dtype by one
// type-specialised loop (element_codec<T>: no per-element dtype switch).
constexpr std::int64_t block_elems = 1024;

// Every chunk of [0, n) in parallel: chunk c's values are draw(rng, buf, count) calls on a
// generator seeded from (seed, c) only.
template <class Draw>
void fill_random(kloop::dtype t, void* data, std::int64_t n, std::uint64_t seed, thread_pool& pool, const Draw& draw) {
    visit_dtype(t, [&](auto tag) {
        constexpr kloop::dtype T = decltype(tag)::value;
        parallel_for_chunks(pool, n, [&](std::int64_t chunk, std::int64_t begin, std::int64_t end) {
            rng r(derive_chunk_seed(seed, static_cast<std::uint64_t>(chunk)));
            double buf[block_elems];
            for (std::int64_t i = begin; i < end; i += block_elems) {
                const std::int64_t len = std::min(block_elems, end - i);
                draw(r, buf, len);
                for (std::int64_t k = 0; k < len; ++k) store_raw<T>(data, i + k, element_codec<T>::encode(buf[k]));
            }
        });
    });
}

// Every element from its index alone (const, arange), in parallel chunks.
template <class Value>
void fill_indexed(kloop::dtype t, void* data, std::int64_t n, thread_pool& pool, const Value& value) {
    visit_dtype(t, [&](auto tag) {
        constexpr kloop::dtype T = decltype(tag)::value;
        parallel_for_chunks(pool, n, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
            for (std::int64_t i = begin; i < end; ++i) store_raw<T>(data, i, element_codec<T>::encode(value(i)));
        });
    });
}

}  // namespace

void fill_input(const spec::initializer& init, kloop::dtype t, void* data, std::int64_t n_elems,
                const spec::dim_env& dims, std::uint64_t seed) {
    fill_input(init, t, data, n_elems, dims, seed, thread_pool::shared());
}

void fill_input(const spec::initializer& init, kloop::dtype t, void* data, std::int64_t n_elems,
                const spec::dim_env& dims, std::uint64_t seed, thread_pool& pool) {
    if (n_elems < 0) fail(init, "negative element count " + std::to_string(n_elems));
    const double a = init.a;
    const double b = init.b;
    switch (init.kind) {
        case spec::init_kind::normal:
            fill_random(t, data, n_elems, seed, pool, [&](rng& r, double* buf, std::int64_t len) {
                r.fill_normal(buf, static_cast<std::size_t>(len));
                for (std::int64_t k = 0; k < len; ++k) buf[k] = a + b * buf[k];
            });
            return;
        case spec::init_kind::uniform:
            fill_random(t, data, n_elems, seed, pool, [&](rng& r, double* buf, std::int64_t len) {
                for (std::int64_t k = 0; k < len; ++k) buf[k] = a + (b - a) * r.uniform01();
            });
            return;
        case spec::init_kind::randint: {
            constexpr double limit = 9007199254740992.0;  // 2^53: integers stay exact in double
            if (a != std::floor(a) || b != std::floor(b) || std::fabs(a) > limit || std::fabs(b) > limit)
                fail(init, "randint bounds must be integers with |v| <= 2^53");
            if (!(b > a)) fail(init, "randint needs lo < hi (hi is exclusive)");
            const auto lo = static_cast<std::int64_t>(a);
            const auto span = static_cast<std::uint64_t>(static_cast<std::int64_t>(b) - lo);
            fill_random(t, data, n_elems, seed, pool, [&](rng& r, double* buf, std::int64_t len) {
                for (std::int64_t k = 0; k < len; ++k)
                    buf[k] = static_cast<double>(lo + static_cast<std::int64_t>(r.next_below(span)));
            });
            return;
        }
        case spec::init_kind::constant:
            fill_indexed(t, data, n_elems, pool, [&](std::int64_t) { return a; });
            return;
        case spec::init_kind::logsigmoid_normal:
            fill_random(t, data, n_elems, seed, pool, [&](rng& r, double* buf, std::int64_t len) {
                r.fill_normal(buf, static_cast<std::size_t>(len));
                for (std::int64_t k = 0; k < len; ++k) buf[k] = log_sigmoid(a + b * buf[k]);
            });
            return;
        case spec::init_kind::cu_seqlens: {
            rng r(seed);
            fill_cu_seqlens(init, t, data, n_elems, dims, r);
            return;
        }
        case spec::init_kind::int_edges: {
            constexpr double limit = 9007199254740992.0;  // 2^53
            if (a != std::floor(a) || b != std::floor(b) || std::fabs(a) > limit || std::fabs(b) > limit)
                fail(init, "int_edges bounds must be integers with |v| <= 2^53");
            if (!(b >= a)) fail(init, "int_edges needs lo <= hi");
            const std::vector<double> edges = int_edge_values(a, b);
            fill_random(t, data, n_elems, seed, pool, [&](rng& r, double* buf, std::int64_t len) {
                for (std::int64_t k = 0; k < len; ++k) buf[k] = edges[r.next_below(edges.size())];
            });
            return;
        }
        case spec::init_kind::spike: {
            const std::int64_t row = init.total.eval(dims);
            if (row < 1) fail(init, "the row length evaluates to " + std::to_string(row) + "; it must be >= 1");
            fill_random(t, data, n_elems, seed, pool, [&](rng& r, double* buf, std::int64_t len) {
                r.fill_normal(buf, static_cast<std::size_t>(len));
                for (std::int64_t k = 0; k < len; ++k) buf[k] = a * buf[k];
            });
            rng r(derive_seed(seed, "spike"));
            for (std::int64_t start = 0; start < n_elems; start += row) {
                const auto pos = static_cast<std::int64_t>(r.next_below(static_cast<std::uint64_t>(row)));
                const double sign = (r.next_u64() >> 63) != 0 ? -1.0 : 1.0;
                if (start + pos < n_elems) store_element(t, data, start + pos, sign * b);
            }
            return;
        }
        case spec::init_kind::arange:
            fill_indexed(t, data, n_elems, pool, [&](std::int64_t i) { return a + static_cast<double>(i) * b; });
            return;
    }
    fail(init, "unknown init kind");
}

}  // namespace kloop::check
