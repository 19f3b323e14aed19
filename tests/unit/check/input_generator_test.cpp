// Unit under test: check/input_generator — every init kind, reproducibility, rounding into the
// dtype, the cu_seqlens invariants, and the chunked streams: same bytes on any thread count,
// chunk-boundary sizes, each chunk's documented seed, moments across chunks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "check/element_access.hpp"
#include "check/half.hpp"
#include "check/input_generator.hpp"
#include "core/rng.hpp"
#include "core/thread_pool.hpp"

using kloop::dtype;
using kloop::check::fill_input;
using kloop::spec::initializer;
using kloop::spec::init_kind;

namespace {

initializer make(init_kind k, double a, double b, const std::string& text = "") {
    initializer init;
    init.kind = k;
    init.a = a;
    init.b = b;
    init.text = text;
    return init;
}

initializer seqlens(const std::string& total) {
    initializer init;
    init.kind = init_kind::cu_seqlens;
    init.total = kloop::spec::dim_expr::parse(total);
    init.text = "cu_seqlens(" + total + ")";
    return init;
}

struct moments {
    double mean;
    double stdev;
};

moments moments_of(const std::vector<double>& v) {
    double s = 0.0;
    for (double x : v) s += x;
    const double mean = s / static_cast<double>(v.size());
    double ss = 0.0;
    for (double x : v) ss += (x - mean) * (x - mean);
    return {mean, std::sqrt(ss / static_cast<double>(v.size() - 1))};
}

const kloop::spec::dim_env no_dims;

}  // namespace

TEST(InputGeneratorTest, SpikeHasOneDominantValuePerRowOverNormalValues) {
    const auto init = initializer::parse("spike(1, 1000, D)");
    const kloop::spec::dim_env dims{{"D", 100}};
    const std::int64_t n = 100 * 1000 + 37;  // 1000 full rows, crossing chunk boundaries, and a partial row
    std::vector<float> v(static_cast<std::size_t>(n));
    fill_input(init, dtype::f32, v.data(), n, dims, 11);
    int positive = 0;
    for (std::int64_t r = 0; r * 100 < n; ++r) {
        int peaks = 0;
        for (std::int64_t j = r * 100; j < std::min(n, (r + 1) * 100); ++j) {
            const float x = v[static_cast<std::size_t>(j)];
            if (std::fabs(x) == 1000.0f) {
                ++peaks;
                positive += x > 0 ? 1 : 0;
            } else {
                EXPECT_LT(std::fabs(x), 8.0f) << j;
            }
        }
        if ((r + 1) * 100 <= n) EXPECT_EQ(peaks, 1) << "row " << r;
        else EXPECT_LE(peaks, 1);
    }
    EXPECT_GT(positive, 400);  // both signs, about half each
    EXPECT_LT(positive, 600);
    // The non-peak values are normal(0, std)'s: the same stream as normal(0, 1).
    std::vector<float> base(static_cast<std::size_t>(n));
    fill_input(initializer::parse("normal(0, 1)"), dtype::f32, base.data(), n, dims, 11);
    std::int64_t same = 0;
    for (std::size_t i = 0; i < v.size(); ++i) same += v[i] == base[i] ? 1 : 0;
    const auto peaks = std::count_if(v.begin(), v.end(), [](float x) { return std::fabs(x) == 1000.0f; });
    EXPECT_GE(peaks, 1000);
    EXPECT_EQ(same, n - peaks) << "only the peaks differ from normal(0, 1)'s values";
    std::vector<float> again(v.size()), other(v.size());
    fill_input(init, dtype::f32, again.data(), n, dims, 11);
    fill_input(init, dtype::f32, other.data(), n, dims, 12);
    EXPECT_EQ(again, v);
    EXPECT_NE(other, v);
    EXPECT_THROW(fill_input(initializer::parse("spike(1, 5, D-100)"), dtype::f32, v.data(), 10, dims, 1),
                 std::invalid_argument);
}

TEST(InputGeneratorTest, IntEdgesDrawsOnlyTheEdgeValues) {
    EXPECT_EQ(kloop::check::int_edge_values(-128, 127), (std::vector<double>{-128, -127, -1, 0, 1, 126, 127}));
    EXPECT_EQ(kloop::check::int_edge_values(0, 1), (std::vector<double>{0, 1}));
    EXPECT_EQ(kloop::check::int_edge_values(5, 5), (std::vector<double>{5}));
    const std::int64_t n = 200000;
    std::vector<std::int32_t> v(static_cast<std::size_t>(n));
    fill_input(initializer::parse("int_edges(-2147483648, 2147483647)"), dtype::i32, v.data(), n, no_dims, 5);
    std::vector<std::int32_t> seen(v);
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    EXPECT_EQ(seen, (std::vector<std::int32_t>{INT32_MIN, INT32_MIN + 1, -1, 0, 1, INT32_MAX - 1, INT32_MAX}));
    EXPECT_THROW(fill_input(make(init_kind::int_edges, 3, 2), dtype::i32, v.data(), 4, no_dims, 1), std::invalid_argument);
}

TEST(InputGeneratorTest, NormalMeanAndStdWithinBounds) {
    std::vector<double> v(100000);
    fill_input(make(init_kind::normal, 2.0, 0.5), dtype::f64, v.data(), 100000, no_dims, 17);
    const auto m = moments_of(v);
    EXPECT_NEAR(m.mean, 2.0, 0.01);   // standard error 0.0016
    EXPECT_NEAR(m.stdev, 0.5, 0.005); // standard error 0.0011
}

TEST(InputGeneratorTest, SameSeedSameValuesOtherSeedOtherValues) {
    std::vector<float> a(1000);
    std::vector<float> b(1000);
    std::vector<float> c(1000);
    const auto init = make(init_kind::normal, 0.0, 1.0);
    fill_input(init, dtype::f32, a.data(), 1000, no_dims, 99);
    fill_input(init, dtype::f32, b.data(), 1000, no_dims, 99);
    fill_input(init, dtype::f32, c.data(), 1000, no_dims, 100);
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
}

TEST(InputGeneratorTest, UniformStaysInRange) {
    std::vector<double> v(50000);
    fill_input(make(init_kind::uniform, -3.0, 5.0), dtype::f64, v.data(), 50000, no_dims, 1);
    for (double x : v) {
        ASSERT_GE(x, -3.0);
        ASSERT_LT(x, 5.0);
    }
    EXPECT_NEAR(moments_of(v).mean, 1.0, 0.05);
}

TEST(InputGeneratorTest, RandintIsIntegralHalfOpenAndCoversRange) {
    std::vector<std::int32_t> v(20000);
    fill_input(make(init_kind::randint, -2.0, 3.0), dtype::i32, v.data(), 20000, no_dims, 5);
    int counts[5] = {};
    for (auto x : v) {
        ASSERT_GE(x, -2);
        ASSERT_LT(x, 3);
        ++counts[x + 2];
    }
    for (int c : counts) EXPECT_NEAR(c, 4000, 300);
    EXPECT_THROW(fill_input(make(init_kind::randint, 3.0, 3.0), dtype::i32, v.data(), 10, no_dims, 5),
                 std::invalid_argument);
    EXPECT_THROW(fill_input(make(init_kind::randint, 0.5, 3.0), dtype::i32, v.data(), 10, no_dims, 5),
                 std::invalid_argument);
}

TEST(InputGeneratorTest, ConstantAndArange) {
    std::vector<std::int64_t> c(7);
    fill_input(make(init_kind::constant, 42.0, 0.0), dtype::i64, c.data(), 7, no_dims, 0);
    for (auto x : c) EXPECT_EQ(x, 42);
    std::vector<float> a(5);
    fill_input(make(init_kind::arange, 1.0, 0.5), dtype::f32, a.data(), 5, no_dims, 0);
    EXPECT_EQ(a, (std::vector<float>{1.0f, 1.5f, 2.0f, 2.5f, 3.0f}));
}

TEST(InputGeneratorTest, LogsigmoidNormalIsNegativeAndStable) {
    std::vector<double> v(20000);
    fill_input(make(init_kind::logsigmoid_normal, 0.0, 20.0), dtype::f64, v.data(), 20000, no_dims, 8);
    for (double x : v) {
        ASSERT_TRUE(std::isfinite(x));
        ASSERT_LE(x, 0.0);
    }
    EXPECT_NEAR(kloop::check::log_sigmoid(0.0), -std::log(2.0), 1e-15);
    EXPECT_NEAR(kloop::check::log_sigmoid(-800.0), -800.0, 1e-12);   // naive log(1/(1+e^800)) overflows
    EXPECT_NEAR(kloop::check::log_sigmoid(40.0), -std::exp(-40.0), 1e-30);  // naive log(1 - tiny) = 0
    EXPECT_NEAR(kloop::check::log_sigmoid(2.0), std::log(1.0 / (1.0 + std::exp(-2.0))), 1e-15);
}

TEST(InputGeneratorTest, ValuesAreStoredRoundedIntoTheDtype) {
    std::vector<std::uint16_t> h(4);
    fill_input(make(init_kind::arange, 0.1, 1.0), dtype::f16, h.data(), 4, no_dims, 0);
    EXPECT_EQ(h[0], kloop::check::double_to_f16(0.1));
    EXPECT_EQ(h[0], 0x2E66);
    EXPECT_EQ(h[1], kloop::check::double_to_f16(1.1));
    std::vector<std::uint16_t> b(2);
    fill_input(make(init_kind::constant, 1.0 + 1.0 / 256.0, 0.0), dtype::bf16, b.data(), 2, no_dims, 0);
    EXPECT_EQ(b[0], 0x3F80);  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even wins
}

TEST(InputGeneratorTest, CuSeqlensMonotoneFromZeroToTotal) {
    kloop::spec::dim_env dims{{"T", 1000}};
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
        std::vector<std::int32_t> o(9);  // 8 sequences
        fill_input(seqlens("T"), dtype::i32, o.data(), 9, dims, seed);
        EXPECT_EQ(o.front(), 0);
        EXPECT_EQ(o.back(), 1000);
        for (std::size_t i = 1; i < o.size(); ++i) ASSERT_LT(o[i - 1], o[i]) << "seed " << seed;
    }
}

TEST(InputGeneratorTest, CuSeqlensEdgeCases) {
    kloop::spec::dim_env dims{{"T", 5}};
    std::vector<std::int64_t> o(6);  // 5 sequences of total 5: all lengths 1
    fill_input(seqlens("T"), dtype::i64, o.data(), 6, dims, 3);
    EXPECT_EQ(o, (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5}));
    std::vector<std::int64_t> two(2);  // 1 sequence
    fill_input(seqlens("T*2"), dtype::i64, two.data(), 2, dims, 3);
    EXPECT_EQ(two, (std::vector<std::int64_t>{0, 10}));
    std::vector<std::int64_t> many(7);  // 6 sequences cannot share 5 tokens
    EXPECT_THROW(fill_input(seqlens("T"), dtype::i64, many.data(), 7, dims, 3), std::invalid_argument);
    kloop::spec::dim_env big{{"T", 100000}};
    std::vector<std::uint16_t> h(3);  // 100000 is not an f16 value
    EXPECT_THROW(fill_input(seqlens("T"), dtype::f16, h.data(), 3, big, 3), std::invalid_argument);
}

TEST(InputGeneratorTest, CuSeqlensLengthsAreVaried) {
    kloop::spec::dim_env dims{{"T", 100000}};
    std::vector<std::int64_t> o(65);
    fill_input(seqlens("T"), dtype::i64, o.data(), 65, dims, 77);
    std::int64_t min_len = o[1] - o[0];
    std::int64_t max_len = min_len;
    for (std::size_t i = 1; i < o.size(); ++i) {
        min_len = std::min(min_len, o[i] - o[i - 1]);
        max_len = std::max(max_len, o[i] - o[i - 1]);
    }
    EXPECT_GT(max_len, 2 * min_len);  // not an even split
}

// ---- chunked, parallel generation (docs/correctness.md, "Input generation") ----

namespace {

constexpr std::int64_t chunk = kloop::k_chunk_elems;

std::vector<unsigned char> generate(const initializer& init, dtype t, std::int64_t n, std::uint64_t seed,
                                    kloop::thread_pool& pool) {
    std::vector<unsigned char> bytes(static_cast<std::size_t>(n) * kloop::size_bytes(t) + 1, 0xA5);
    fill_input(init, t, bytes.data(), n, no_dims, seed, pool);
    EXPECT_EQ(bytes.back(), 0xA5) << "wrote past the end";
    bytes.pop_back();
    return bytes;
}

}  // namespace

TEST(InputGeneratorTest, SameBytesOnOneThreadAndOnMany) {
    kloop::thread_pool one(1);
    kloop::thread_pool many(5);
    const std::int64_t n = 3 * chunk + 123;
    const std::vector<initializer> inits = {make(init_kind::normal, 0.5, 2.0), make(init_kind::uniform, -1.0, 3.0),
                                            make(init_kind::randint, -7.0, 100.0),
                                            make(init_kind::logsigmoid_normal, 0.0, 3.0),
                                            make(init_kind::constant, 1.25, 0.0), make(init_kind::arange, -4.0, 0.5)};
    for (const auto& init : inits) {
        for (dtype t : {dtype::f32, dtype::f16, dtype::bf16, dtype::f64, dtype::i32, dtype::i64}) {
            const auto a = generate(init, t, n, 4242, one);
            const auto b = generate(init, t, n, 4242, many);
            ASSERT_EQ(a, b) << kloop::spec::to_string(init.kind) << " " << kloop::to_string(t);
        }
    }
}

TEST(InputGeneratorTest, ChunkBoundarySizesArePrefixesOfOneStream) {
    // Element i depends on (seed, i) only: a shorter tensor is a prefix of a longer one, on both
    // sides of every chunk boundary.
    kloop::thread_pool pool(3);
    const std::int64_t longest = 2 * chunk + 3;
    for (const auto& init : {make(init_kind::normal, 0.0, 1.0), make(init_kind::uniform, 0.0, 1.0),
                             make(init_kind::randint, 0.0, 1000.0), make(init_kind::logsigmoid_normal, 1.0, 2.0)}) {
        const auto full = generate(init, dtype::f32, longest, 77, pool);
        for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, chunk - 1, chunk, chunk + 1, 2 * chunk + 2}) {
            const auto part = generate(init, dtype::f32, n, 77, pool);
            ASSERT_EQ(part.size(), static_cast<std::size_t>(n) * 4);
            ASSERT_TRUE(std::equal(part.begin(), part.end(), full.begin()))
                << kloop::spec::to_string(init.kind) << " n=" << n;
        }
    }
}

TEST(InputGeneratorTest, EachChunkIsItsOwnDocumentedStream) {
    // Re-derive elements by hand from the documented scheme: chunk c draws in order from
    // rng(derive_chunk_seed(seed, c)); normal(m, s) stores m + s*z rounded into the dtype.
    const std::uint64_t seed = 31337;
    const std::int64_t n = 2 * chunk + 10;
    std::vector<double> v(static_cast<std::size_t>(n));
    fill_input(make(init_kind::normal, 1.0, 0.25), dtype::f64, v.data(), n, no_dims, seed);
    for (std::uint64_t c : {0u, 1u, 2u}) {
        kloop::rng r(kloop::derive_chunk_seed(seed, c));
        for (std::int64_t k = 0; k < 5; ++k)
            ASSERT_EQ(v[static_cast<std::size_t>(static_cast<std::int64_t>(c) * chunk + k)], 1.0 + 0.25 * r.normal())
                << "chunk " << c << " element " << k;
    }
    std::vector<std::int64_t> ints(static_cast<std::size_t>(chunk + 3));
    fill_input(make(init_kind::randint, 10.0, 20.0), dtype::i64, ints.data(), chunk + 3, no_dims, seed);
    kloop::rng r1(kloop::derive_chunk_seed(seed, 1));
    for (std::int64_t k = 0; k < 3; ++k)
        EXPECT_EQ(ints[static_cast<std::size_t>(chunk + k)], 10 + static_cast<std::int64_t>(r1.next_below(10)));
    // arange is the index formula across chunk boundaries.
    std::vector<double> ar(static_cast<std::size_t>(chunk + 2));
    fill_input(make(init_kind::arange, 3.0, 0.5), dtype::f64, ar.data(), chunk + 2, no_dims, 0);
    EXPECT_EQ(ar[static_cast<std::size_t>(chunk + 1)], 3.0 + static_cast<double>(chunk + 1) * 0.5);
}

TEST(InputGeneratorTest, NormalAcrossManyChunksHasTheRightMoments) {
    // 8 chunks: a bad chunk seeding (repeated or correlated streams) would show in the moments or
    // in the correlation of neighbouring chunks.
    const std::int64_t n = 8 * chunk;
    std::vector<double> v(static_cast<std::size_t>(n));
    fill_input(make(init_kind::normal, -1.0, 3.0), dtype::f64, v.data(), n, no_dims, 5);
    const auto m = moments_of(v);
    EXPECT_NEAR(m.mean, -1.0, 0.03);   // standard error 0.0041
    EXPECT_NEAR(m.stdev, 3.0, 0.02);   // standard error 0.0029
    for (std::int64_t c = 0; c + 1 < 8; ++c) {
        double sxy = 0.0;
        for (std::int64_t k = 0; k < chunk; ++k)
            sxy += (v[static_cast<std::size_t>(c * chunk + k)] + 1.0) * (v[static_cast<std::size_t>((c + 1) * chunk + k)] + 1.0);
        const double corr = sxy / static_cast<double>(chunk) / 9.0;
        EXPECT_LT(std::fabs(corr), 0.02) << "chunks " << c << " and " << c + 1;  // standard error 0.0039
    }
    // Standard-normal tail mass beyond 3 sigma: 0.27 %.
    std::int64_t beyond = 0;
    for (double x : v) beyond += std::fabs(x + 1.0) > 9.0;
    EXPECT_NEAR(static_cast<double>(beyond) / static_cast<double>(n), 0.0027, 0.0006);
}

TEST(InputGeneratorTest, ErrorsAreThrownBeforeAnythingIsWritten) {
    std::vector<std::int32_t> v(10, 123);
    EXPECT_THROW(fill_input(make(init_kind::randint, 5.0, 5.0), dtype::i32, v.data(), 10, no_dims, 1),
                 std::invalid_argument);
    for (auto x : v) EXPECT_EQ(x, 123);
    EXPECT_THROW(fill_input(make(init_kind::normal, 0.0, 1.0), dtype::i32, v.data(), -1, no_dims, 1),
                 std::invalid_argument);
}
