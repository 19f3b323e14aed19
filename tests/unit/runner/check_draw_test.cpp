// Unit under test: runner/call_checks — call_preparation::draw_checked, the draw of which timed
// calls are checked: 1/check_every at first, then thinning as tail_checks/(s + 1) but never
// stopping, so a candidate that cheats only after many calls still meets checks.
#include <gtest/gtest.h>

#include <vector>

#include "runner/call_checks.hpp"

namespace kloop::runner {
namespace {

call_plan tiny_plan() {
    call_plan p;
    p.mode = "fwd";
    p.shape = "s";
    p.inputs.push_back({"x", dtype::f32, {4}, "normal(0, 1)", false, {}});
    return p;
}

std::vector<std::size_t> checked(std::uint64_t seed, int check_every, int tail_checks, std::size_t samples) {
    bench_item b;
    b.seed = seed;
    b.check_every = check_every;
    b.tail_checks = tail_checks;
    const auto plan = tiny_plan();
    call_preparation prep(b, plan);
    std::vector<std::size_t> hits;
    for (std::size_t s = 0; s < samples; ++s)
        if (prep.draw_checked(s)) hits.push_back(s);
    return hits;
}

TEST(CheckDrawTest, TheRateIsOneInCheckEveryAtFirst) {
    const auto hits = checked(7, 8, 1000000, 20000);
    EXPECT_GT(hits.size(), 2500 * 0.85);
    EXPECT_LT(hits.size(), 2500 * 1.15);
}

TEST(CheckDrawTest, TheSeedDecides) {
    EXPECT_EQ(checked(7, 4, 99, 300), checked(7, 4, 99, 300));
    EXPECT_NE(checked(7, 4, 99, 300), checked(8, 4, 99, 300));
}

TEST(CheckDrawTest, ChecksThinOutButReachTheEndOfALongRun) {
    // The defaults over 600 samples: about 4 + 4 ln(600/32) ≈ 15.7 checks, and some past the
    // 150th sample in almost every run (none there: probability (150/600)^4 = 0.4 %).
    double total = 0;
    int late = 0;
    for (std::uint64_t seed = 0; seed < 400; ++seed) {
        const auto hits = checked(seed, 8, 4, 600);
        total += static_cast<double>(hits.size());
        late += !hits.empty() && hits.back() >= 150;
    }
    EXPECT_GT(total / 400, 12.0);
    EXPECT_LT(total / 400, 20.0);
    EXPECT_GE(late, 390);
}

TEST(CheckDrawTest, CheckEveryZeroChecksNothing) { EXPECT_TRUE(checked(3, 0, 4, 1000).empty()); }

}  // namespace
}  // namespace kloop::runner
