// Unit under test: profile/ncu_details — ncu's rule results and section metrics from the details
// page of the recorded H200 capture (whose metric rows omit the trailing rule columns), and the
// errors for the wrong page and ragged rows.
#include <gtest/gtest.h>

#include "profile/ncu_csv.hpp"
#include "profile/ncu_details.hpp"
#include "profile_test_util.hpp"

using namespace kloop::profile;
using namespace kloop::profile::testing;

namespace {

const ncu_rule_result* rule(const ncu_details& d, const std::string& name, const std::string& type) {
    for (const auto& r : d.rules)
        if (r.rule == name && r.type == type) return &r;
    return nullptr;
}

std::string error_of(const std::string& text) {
    try {
        (void)parse_ncu_details_csv(text, "d.csv");
    } catch (const ncu_csv_error& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST(NcuDetailsTest, RecordedCaptureRules) {
    const ncu_details d = parse_ncu_details_csv(read_text(data_path(v0_details_name)), v0_details_name);
    EXPECT_EQ(d.rules.size(), 7u);
    const auto* sol = rule(d, "SOLBottleneck", "OPT");
    ASSERT_NE(sol, nullptr);
    EXPECT_EQ(sol->kernel_id, "0");
    EXPECT_EQ(sol->section, "SpeedOfLight");
    EXPECT_NE(sol->description.find("identify the L2 bottleneck"), std::string::npos);
    EXPECT_FALSE(sol->estimated_speedup_pct.has_value());
    const auto* cpi = rule(d, "CPIStall", "OPT");
    ASSERT_NE(cpi, nullptr);
    EXPECT_EQ(cpi->speedup_type, "global");
    EXPECT_DOUBLE_EQ(*cpi->estimated_speedup_pct, 32.73);
    EXPECT_NE(cpi->description.find("93.3%"), std::string::npos);
    const auto* launch = rule(d, "LaunchConfiguration", "OPT");
    ASSERT_NE(launch, nullptr);
    EXPECT_DOUBLE_EQ(*launch->estimated_speedup_pct, 3.03);
    EXPECT_NE(rule(d, "CPIStall", "WRN"), nullptr);
    EXPECT_NE(rule(d, "CPIStall", "INF"), nullptr);
    const auto j = to_json(*cpi);
    EXPECT_EQ(j.at("rule"), "CPIStall");
    EXPECT_EQ(j.at("estimated_speedup_pct"), 32.73);
    EXPECT_TRUE(to_json(*sol).at("estimated_speedup_pct").is_null());
}

TEST(NcuDetailsTest, RecordedCaptureMetricsInBaseUnits) {
    const ncu_details d = parse_ncu_details_csv(read_text(data_path(v0_details_name)), v0_details_name);
    EXPECT_EQ(d.metrics.size(), 61u);
    auto find = [&](const std::string& name) -> const ncu_details_metric* {
        for (const auto& m : d.metrics)
            if (m.name == name) return &m;
        return nullptr;
    };
    const auto* dur = find("Duration");
    ASSERT_NE(dur, nullptr);
    EXPECT_EQ(dur->section, "GPU Speed Of Light Throughput");
    EXPECT_EQ(dur->text, "2.64");
    EXPECT_DOUBLE_EQ(*dur->number, 2.64e6);
    EXPECT_EQ(dur->unit, "ns");
    const auto* cycles = find("Elapsed Cycles");
    ASSERT_NE(cycles, nullptr);
    EXPECT_EQ(*cycles->number, 5228998.0);  // "5,228,998"
    const auto* bw = find("Memory Throughput");
    ASSERT_NE(bw, nullptr);  // the first one: SOL's, in %
    EXPECT_EQ(bw->unit, "%");
    const auto* spill = find("Local Memory Spilling Request Overhead");
    ASSERT_NE(spill, nullptr);
    EXPECT_FALSE(spill->number.has_value());  // "no data"
}

TEST(NcuDetailsTest, WrongPageAndRaggedRows) {
    // The raw page is not the details page.
    EXPECT_NE(error_of(read_text(data_path(v0_raw_name))).find("not the details page"), std::string::npos);
    const std::string header =
        "\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\",\"Rule Name\","
        "\"Rule Type\",\"Rule Description\"\n";
    // A metric row may stop early; a longer row or a one-field line may not.
    const std::string ok = header + "\"0\",\"k\",\"S\",\"Duration\",\"us\",\"1,500\"\n";
    const ncu_details d = parse_ncu_details_csv(ok, "ok.csv");
    ASSERT_EQ(d.metrics.size(), 1u);
    EXPECT_EQ(*d.metrics[0].number, 1.5e6);
    EXPECT_TRUE(d.rules.empty());
    EXPECT_NE(error_of(header + "\"0\",\"k\",\"S\",\"M\",\"\",\"1\",\"\",\"\",\"\",\"extra\"\n").find("d.csv:2: expected 9"),
              std::string::npos);
    EXPECT_NE(error_of(header + "==PROF== Disconnected\n").find("d.csv:2"), std::string::npos);
    // A required column missing.
    EXPECT_NE(error_of("\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Value\"\n").find("'Rule Name'"),
              std::string::npos);
    EXPECT_NE(error_of("no csv here\n").find("--page details"), std::string::npos);
}
