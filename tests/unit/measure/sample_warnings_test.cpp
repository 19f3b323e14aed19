// Unit under test: measure/sample_warnings — what makes a shape's median weak evidence: too few
// samples, a wide spread, a cap that ended it, throttled samples; nothing for a clean shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "measure/sample_warnings.hpp"

namespace km = kloop::measure;

namespace {

std::vector<std::string> codes(const std::vector<km::sample_warning>& w) {
    std::vector<std::string> out;
    for (const auto& x : w) out.push_back(x.code);
    return out;
}

}  // namespace

TEST(SampleWarningsTest, ACleanConvergedShapeHasNone) {
    const std::vector<double> s(40, 1e-3);
    EXPECT_TRUE(km::sample_warnings(km::summarize(s), "converged", 0).empty());
    EXPECT_TRUE(km::sample_warnings(km::summarize(s), "plateau", 0).empty());
}

TEST(SampleWarningsTest, OneSampleWithAHugeSpreadSaysBoth) {
    // One sample: fewer than the minimum; the spread of a lone sample is 0.
    const auto one = km::sample_warnings(km::summarize(std::vector<double>{2e-3}), "time_cap", 0);
    EXPECT_EQ(codes(one), (std::vector<std::string>{"few_samples", "time_cap"}));
    EXPECT_NE(one[0].message.find("only 1 sample "), std::string::npos) << one[0].message;
    // Twelve samples spread over two orders of magnitude.
    std::vector<double> wide;
    for (int i = 0; i < 12; ++i) wide.push_back(i % 2 ? 1e-3 : 1e-1);
    const auto w = km::sample_warnings(km::summarize(wide), "converged", 0);
    ASSERT_EQ(codes(w), (std::vector<std::string>{"high_cv"}));
    EXPECT_NE(w[0].message.find("%"), std::string::npos);
}

TEST(SampleWarningsTest, CapsAndThrottlingAreNamed) {
    const std::vector<double> s(40, 1e-3);
    EXPECT_EQ(codes(km::sample_warnings(km::summarize(s), "sample_cap", 3)),
              (std::vector<std::string>{"sample_cap", "throttled"}));
    const auto t = km::sample_warnings(km::summarize(s), "converged", 1);
    ASSERT_EQ(t.size(), 1u);
    EXPECT_NE(t[0].message.find("1 sample taken"), std::string::npos) << t[0].message;
}

TEST(SampleWarningsTest, ThresholdsAreTheCallers) {
    std::vector<double> s;
    for (int i = 0; i < 20; ++i) s.push_back(i % 2 ? 1.0e-3 : 1.2e-3);  // cv about 9 %
    EXPECT_TRUE(km::sample_warnings(km::summarize(s), "converged", 0).empty());
    EXPECT_EQ(codes(km::sample_warnings(km::summarize(s), "converged", 0, {30, 0.05})),
              (std::vector<std::string>{"few_samples", "high_cv"}));
}

TEST(SampleWarningsTest, ClockEventsAndABusyMachineAreNamedWithTheirFacts) {
    EXPECT_TRUE(km::clock_event_warning(0, 40, {}).empty());
    const auto c = km::clock_event_warning(3, 40, {"sw_power_cap", "hw_slowdown"});
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].code, "clock_events");
    EXPECT_NE(c[0].message.find("3 of 40 samples"), std::string::npos) << c[0].message;
    EXPECT_NE(c[0].message.find("sw_power_cap, hw_slowdown"), std::string::npos) << c[0].message;
    EXPECT_TRUE(km::busy_machine_warning(false, "x").empty());
    const auto b = km::busy_machine_warning(true, "other runnable threads in 9 of 10 samples");
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].code, "busy_machine");
    EXPECT_NE(b[0].message.find("9 of 10 samples"), std::string::npos);
}
