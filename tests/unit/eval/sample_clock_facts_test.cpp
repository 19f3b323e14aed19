// Tests of eval/sample_clock_facts: the device's clocks as a timing's per-sample info tells them,
// and the warnings a timed series carries from them.
#include "eval/sample_clock_facts.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace {

using nlohmann::json;
using kloop::eval::clock_facts_of;
using kloop::eval::timing_warnings;

bool has_code(const std::vector<kloop::measure::sample_warning>& ws, const std::string& code) {
    return std::any_of(ws.begin(), ws.end(), [&](const auto& w) { return w.code == code; });
}

TEST(SampleClockFactsTest, CountsSamplesWithClockEventsAndKeepsEachReasonOnce) {
    const json info = json::array({
        {{"sm_clock_mhz", 1980}, {"window_s", 1e-3}},
        {{"sm_clock_mhz", 1755}, {"reasons", "sw_power_cap"}},
        {{"sm_clock_mhz", 1700}, {"reasons", "hw_thermal_slowdown"}},
        {{"sm_clock_mhz", 1750}, {"reasons", "sw_power_cap"}},
        nullptr,                                  // not an object: skipped
        {{"sm_clock_mhz", "fast"}, {"reasons", 3}},  // wrong types: skipped
    });
    const auto f = clock_facts_of(info);
    EXPECT_EQ(f.samples_with_events, 3);
    EXPECT_EQ(f.reasons, (std::vector<std::string>{"sw_power_cap", "hw_thermal_slowdown"}));
    ASSERT_TRUE(f.sm_clock_mhz_median.has_value());
    EXPECT_DOUBLE_EQ(*f.sm_clock_mhz_median, 1752.5);  // of the four numeric clocks
}

TEST(SampleClockFactsTest, NoClockFactsMeansNoMedianAndNoEvents) {
    const auto cpu = clock_facts_of(json::array({{{"window_s", 1e-3}}, {{"window_s", 2e-3}}}));
    EXPECT_FALSE(cpu.sm_clock_mhz_median.has_value());
    EXPECT_EQ(cpu.samples_with_events, 0);
    EXPECT_FALSE(clock_facts_of(json::object()).sm_clock_mhz_median.has_value());  // not an array
}

TEST(SampleClockFactsTest, ASeriesTakenDuringClockEventsCarriesTheWarningNamingThem) {
    const std::vector<double> samples(20, 1e-3);
    const auto events = clock_facts_of(json::array({{{"reasons", "sw_power_cap"}}, {{"reasons", "sw_power_cap"}}}));
    const auto warned = timing_warnings(samples, "converged", 0, events);
    ASSERT_TRUE(has_code(warned, "clock_events"));
    const auto w = *std::find_if(warned.begin(), warned.end(), [](const auto& x) { return x.code == "clock_events"; });
    EXPECT_NE(w.message.find("sw_power_cap"), std::string::npos) << w.message;
    EXPECT_NE(w.message.find("2"), std::string::npos) << w.message;

    const auto quiet = timing_warnings(samples, "converged", 0, {});
    EXPECT_FALSE(has_code(quiet, "clock_events"));
    EXPECT_TRUE(quiet.empty());
}

TEST(SampleClockFactsTest, DiscardedSamplesOfASideAreWarnedAsThrottled) {
    const std::vector<double> samples(20, 1e-3);
    EXPECT_TRUE(has_code(timing_warnings(samples, "converged", 3, {}), "throttled"));
    EXPECT_FALSE(has_code(timing_warnings(samples, "converged", 0, {}), "throttled"));
    EXPECT_TRUE(timing_warnings({}, "converged", 3, {}).empty());
}

}  // namespace
