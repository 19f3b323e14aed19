// Unit under test: loop/opt_log, loop/dispatch, loop/nogo, loop/iteration_record (JSON round
// trip) and loop/task_documents — the loop's documents.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "report/dispatch.hpp"
#include "report/iteration_summary.hpp"
#include "loop/nogo.hpp"
#include "report/opt_log.hpp"
#include "report/task_documents.hpp"
#include "loop_test_util.hpp"

using namespace kloop;
using namespace kloop::loop;
using namespace kloop::report;
using kloop::loop::testing::record;
using S = iteration_status;

TEST(OptLogTest, AppendsOnlyMissingRowsAndKeepsUserLines) {
    auto r1 = record(1, S::positive, 1, 2);
    r1.overall = measure::ab_result{1.5, 1.4, 1.6, measure::ab_verdict::faster};
    std::vector<iteration_record> rs{record(0, S::baseline, 2, 4), r1, record(2, S::rejected)};
    const std::string log = "# OPT_LOG\n\nmy note: clocks were locked\n\n| Iter | ... |\n" + opt_log_row(rs[0]);
    const auto fixed = append_missing_rows(log, rs);
    EXPECT_NE(fixed.find("my note: clocks were locked"), std::string::npos);
    EXPECT_NE(fixed.find("| v1 |"), std::string::npos);
    EXPECT_NE(fixed.find("| v2 |"), std::string::npos);
    EXPECT_NE(fixed.find("x1.500 [1.400, 1.600] FASTER vs v0"), std::string::npos);
    EXPECT_NE(fixed.find("rejected (gate)"), std::string::npos);
    EXPECT_EQ(append_missing_rows(fixed, rs), fixed);  // idempotent
}

// An outpaced sibling of a parallel round says so in its row and its summary names its device.
TEST(OptLogTest, AnOutpacedSiblingSaysSoAndItsSummaryNamesItsDevice) {
    auto r = record(4, S::positive, 1, 2);
    r.overall = measure::ab_result{1.2, 1.1, 1.3, measure::ab_verdict::faster};
    r.outpaced_by = 5;
    r.device = "GPU-abc";
    EXPECT_NE(opt_log_row(r).find("| positive, outpaced by its sibling v5 |"), std::string::npos) << opt_log_row(r);
    EXPECT_NE(iteration_summary_md(r, "rmsnorm").find("- Device: GPU-abc\n"), std::string::npos);
    r.outpaced_by.reset();
    r.device.clear();
    EXPECT_EQ(opt_log_row(r).find("outpaced"), std::string::npos);
    EXPECT_EQ(iteration_summary_md(r, "rmsnorm").find("- Device:"), std::string::npos);
}

TEST(OptLogTest, RowEscapesPipes) {
    auto r = record(3, S::negative);
    r.direction = "a | b";
    EXPECT_NE(opt_log_row(r).find("a \\| b"), std::string::npos);
}

TEST(DispatchTest, RowHasTheSpeedupAndRefusesMissingEvidence) {
    dispatch_entry e{"D % 8 != 0", "rmsnorm_fwd_ragged", 2.0, 1.0, "tail loop dominated", "given by hand"};
    const auto text = append_dispatch_row("", "rmsnorm", e);
    EXPECT_NE(text.find("| Bucket condition |"), std::string::npos);
    EXPECT_NE(text.find("| D % 8 != 0 | rmsnorm_fwd_ragged | 2 | 1 | x2.000 |"), std::string::npos);
    e.why.clear();
    EXPECT_THROW((void)dispatch_row(e), usage_error);
    e.why = "x";
    e.candidate_ms = 0;
    EXPECT_THROW((void)dispatch_row(e), usage_error);
}

TEST(NogoTest, ListsWhatIsMissing) {
    std::vector<iteration_record> rs{record(0, S::baseline)};
    auto a = assess_nogo(rs, "");
    EXPECT_FALSE(a.cleared);
    EXPECT_TRUE(a.items[0].met);   // baseline
    EXPECT_FALSE(a.items[1].met);  // no attempt
    EXPECT_FALSE(a.items[4].met);  // no bound
    auto r1 = record(1, S::negative);
    r1.overall = measure::ab_result{0.99, 0.97, 1.01, measure::ab_verdict::same};
    rs.push_back(r1);
    EXPECT_FALSE(assess_nogo(rs, "bandwidth bound").cleared);  // a bound without its number
    a = assess_nogo(rs, "DRAM bandwidth: 41 of 45 GB/s");
    EXPECT_TRUE(a.cleared);
    EXPECT_FALSE(a.positive);
    rs.push_back(record(2, S::positive));
    EXPECT_EQ(assess_nogo(rs, "x 1").positive, 2);
}

TEST(NogoTest, TheBoundComesFromTheBestVersionsProfileWhenNotGiven) {
    auto base = record(0, S::baseline);
    base.profile_status = "full";
    base.profile_bound = "memory-bound";
    base.profile_note = "fwd r16384_h8192: memory-bound: DRAM 88.1 % of peak, 4.21 TB/s (fwd_kernel)";
    auto r1 = record(1, S::negative);
    r1.overall = measure::ab_result{0.99, 0.97, 1.01, measure::ab_verdict::same};
    std::vector<iteration_record> rs{base, r1};
    const auto a = assess_nogo(rs, "");
    EXPECT_TRUE(a.items[4].met);
    EXPECT_NE(a.items[4].evidence.find("DRAM 88.1 %"), std::string::npos);
    EXPECT_NE(a.items[4].evidence.find("full profile of v0"), std::string::npos);
    EXPECT_TRUE(a.cleared);
    rs[0].profile_bound.clear();  // no profile names a bound: still missing
    EXPECT_FALSE(assess_nogo(rs, "").items[4].met);
}

TEST(IterationRecordTest, JsonRoundTrip) {
    auto r = record(4, S::negative, 1.5, 3.0);
    r.ab.push_back({"fwd", "a", true, "", r.bench[0].s, r.bench[0].s, measure::ab_result{1.0, 0.98, 1.02, measure::ab_verdict::same}});
    r.overall = measure::ab_result{1.0, 0.98, 1.02, measure::ab_verdict::same};
    r.git = {true, true, "deadbeef", "msg", ""};
    r.warnings = {"blocked"};
    r.profile_status = "full";
    r.profile_bound = "memory-bound";
    r.suspect = true;
    r.suspect_reasons = {"below_floor: x"};
    const auto back = iteration_record_from_json(to_json(r));
    EXPECT_EQ(back.number, 4);
    EXPECT_EQ(back.status, S::negative);
    EXPECT_NEAR(back.bench[1].s.median, 3.0e-3, 1e-12);
    ASSERT_EQ(back.ab.size(), 1u);
    EXPECT_EQ(back.ab[0].verdict->verdict, measure::ab_verdict::same);
    EXPECT_EQ(back.overall->ci_high, 1.02);
    EXPECT_EQ(back.git.commit, "deadbeef");
    EXPECT_EQ(back.profile_status, "full");
    EXPECT_EQ(back.profile_bound, "memory-bound");
    EXPECT_TRUE(back.suspect);
    EXPECT_EQ(back.suspect_reasons, r.suspect_reasons);
    EXPECT_EQ(back.warnings, r.warnings);
    EXPECT_NEAR(*geomean_median_s(back), std::sqrt(1.5e-3 * 3.0e-3), 1e-12);
    EXPECT_NE(iteration_summary_md(back, "rmsnorm").find("SAME"), std::string::npos);
}

TEST(TrapsTest, SeedsEveryKnownTrapInFactWhyHowForm) {
    const auto t = traps_md();
    for (const char* trap : {"Partial writes", "TF32", "tolerance is relative", "Numeric-flag parity", "int64",
                             "implausible speedup", "autotune", "Clock drift"})
        EXPECT_NE(t.find(trap), std::string::npos) << trap;
    EXPECT_NE(t.find("**Fact**"), std::string::npos);
    EXPECT_NE(t.find("**How to apply**"), std::string::npos);
}
