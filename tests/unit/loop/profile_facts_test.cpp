// Unit under test: loop/record/profile_facts — the named facts of the headline capture, none
// invented when ncu did not report them.
#include <gtest/gtest.h>

#include <algorithm>

#include "loop/record/profile_facts.hpp"

using namespace kloop;
using namespace kloop::loop;

TEST(ProfileFactsTest, TakesTheHeadlineCapturesDominantKernel) {
    eval::profile_step_result r;
    EXPECT_TRUE(profile_facts_of(r).empty());  // nothing parsed
    profile::profile_summary s;
    profile::kernel_entry small, big;
    small.facts.dram_throughput_pct = 10;
    big.facts.dram_throughput_pct = 71.5;
    big.facts.achieved_occupancy_pct = 48;
    s.kernels = {small, big};
    s.dominant = 1;
    profile::roofline_summary roof;
    roof.measured_pct_of_floor = 83;
    roof.reread_factor = 1.02;
    s.roofline = roof;
    eval::profile_entry targeted, full;
    targeted.summary = profile::profile_summary{};
    full.summary = s;
    r.entries = {targeted, full};
    r.headline_entry = 1;
    const auto facts = profile_facts_of(r);
    EXPECT_EQ(facts.size(), 4u);
    EXPECT_DOUBLE_EQ(facts.at("dram_pct_of_peak"), 71.5);
    EXPECT_DOUBLE_EQ(facts.at("achieved_occupancy_pct"), 48);
    EXPECT_DOUBLE_EQ(facts.at("pct_of_floor"), 83);
    EXPECT_DOUBLE_EQ(facts.at("reread_factor"), 1.02);
    EXPECT_FALSE(facts.contains("sm_pct_of_peak"));  // not reported: absent
    for (const auto& [name, value] : facts)
        EXPECT_NE(std::find(profile_fact_names().begin(), profile_fact_names().end(), name), profile_fact_names().end()) << name;
}
