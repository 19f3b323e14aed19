// Unit under test: loop/report_page's readers — a version folder's profile_summary.json as the
// profile step writes it (report/profile_report, from the recorded H200 captures) read back into
// roofline points and dominant-kernel diagnoses, and final_result.json's A/B record
// (report/ab_json) read back into the numbers and raw samples the page draws.
#include <gtest/gtest.h>

#include "loop/report_page.hpp"
#include "loop/workspace.hpp"
#include "platform/file_io.hpp"
#include "profile/kernel_profile.hpp"
#include "profile/ncu_csv.hpp"
#include "profile/profile_summary.hpp"
#include "report/ab_json.hpp"
#include "report/profile_report.hpp"
#include "unit/profile/profile_test_util.hpp"

using namespace kloop;
namespace fs = std::filesystem;

namespace {

// One capture of the recorded rmsnorm forward (N = 16384, D = 8192) as the profile step keeps it.
eval::profile_entry entry(const std::string& set, const std::string& raw_name, double measured_ns) {
    using namespace kloop::profile::testing;
    const double n = 16384, d = 8192;
    profile::summary_input in;
    in.kernels = profile::profiles_from_table(profile::parse_ncu_raw_csv(read_text(data_path(raw_name)), raw_name));
    in.roofline = profile::roofline_input{"r16384_h8192", 4 * n * d, 2 * (2 * n * d + d) + 4 * n, false, measured_ns, 1};
    in.source = raw_name;
    eval::profile_entry e;
    e.capture.mode = "fwd";
    e.capture.shape = "r16384_h8192";
    e.capture.set = set;
    e.capture.status = "captured";
    e.summary = profile::summarize_profile(in);
    e.measured_ns = measured_ns;
    e.spec_flops = in.roofline->flops;
    e.spec_bytes = in.roofline->bytes;
    return e;
}

}  // namespace

TEST(ReportPageTest, ReadsTheFullCaptureOfARealProfileSummary) {
    platform::scoped_temp_dir dir("kloop-report-page-test");
    eval::profile_step_result step;
    step.status = "full";
    step.entries.push_back(entry("targeted", "v2_fwd_r16384_h8192_targeted.raw.csv", 700e3));
    step.entries.push_back(entry("full", "v2_fwd_r16384_h8192_full.raw.csv", 700e3));
    report::write_profile_summary(dir.path(), step);

    const auto p = loop::read_version_profile(dir.path() / "profile_summary.json", 2);
    ASSERT_EQ(p.points.size(), 1u);  // one per mode and shape: the full capture's
    const auto& pt = p.points[0];
    const auto& full = *step.entries[1].summary;
    EXPECT_EQ(pt.version, 2);
    EXPECT_EQ(pt.set, "full");
    EXPECT_EQ(pt.mode, "fwd");
    EXPECT_EQ(pt.shape, "r16384_h8192");
    EXPECT_EQ(pt.device, "NVIDIA H200");
    EXPECT_DOUBLE_EQ(pt.flops, full.roofline->point.flops);
    EXPECT_DOUBLE_EQ(pt.bytes, full.roofline->point.bytes);
    ASSERT_TRUE(pt.measured_ns.has_value());
    EXPECT_DOUBLE_EQ(*pt.measured_ns, 700e3);
    ASSERT_TRUE(pt.profiled_ns.has_value());
    EXPECT_DOUBLE_EQ(*pt.profiled_ns, *full.roofline->profiled_ns);
    ASSERT_TRUE(p.peaks_used.has_value());
    EXPECT_EQ(p.peaks_used->source, profile::peak_source::datasheet);
    EXPECT_DOUBLE_EQ(p.peaks_used->dram_bytes_per_s, full.roofline->peaks.dram_bytes_per_s);

    ASSERT_EQ(p.diagnoses.size(), 1u);
    const auto& dom = full.kernels[*full.dominant];
    EXPECT_EQ(p.diagnoses[0].headline, dom.diag.headline);
    EXPECT_EQ(p.diagnoses[0].kernel, profile::short_kernel_name(dom.facts.name));
    EXPECT_EQ(p.diagnoses[0].directions.size(), dom.diag.directions.size());
    EXPECT_EQ(p.diagnoses[0].bound.rfind(profile::to_string(dom.diag.kind), 0), 0u) << p.diagnoses[0].bound;

    // No file, or not JSON: nothing, not an error.
    EXPECT_TRUE(loop::read_version_profile(dir.path() / "absent.json", 0).points.empty());
    platform::write_file_atomic(dir.path() / "bad.json", "{not json");
    EXPECT_TRUE(loop::read_version_profile(dir.path() / "bad.json", 0).points.empty());
}

TEST(ReportPageTest, ReadsTheFinalAbRecordBackWithItsSamples) {
    eval::ab_evaluation ab;
    ab.ok = true;
    ab.config.min_effect = 0.03;
    ab.env.host_cpu = "Test CPU";
    ab.env.logical_cpus = 4;
    eval::ab_shape_result s;
    s.mode = "fwd";
    s.shape = "n4096_d1024";
    s.ok = true;
    s.base_samples_s = {1.0e-3, 1.1e-3, 0.9e-3, 1.05e-3, 0.98e-3};
    s.candidate_samples_s = {0.5e-3, 0.52e-3, 0.49e-3, 0.51e-3, 0.7e-3};
    s.base_s = measure::summarize(s.base_samples_s);
    s.candidate_s = measure::summarize(s.candidate_samples_s);
    s.verdict = measure::ab_result{1.96, 1.9, 2.02, measure::ab_verdict::faster};
    ab.shapes.push_back(s);
    eval::ab_shape_result failed;
    failed.mode = "bwd";
    failed.shape = "n4096_d1024";
    failed.error = "candidate crashed";
    ab.shapes.push_back(failed);
    ab.overall = measure::ab_result{1.96, 1.9, 2.02, measure::ab_verdict::faster};

    const auto back = loop::ab_from_json(report::to_json(ab));
    ASSERT_EQ(back.shapes.size(), 2u);
    const auto& b = back.shapes[0];
    EXPECT_TRUE(b.ok);
    ASSERT_EQ(b.base_samples_s.size(), 5u);
    for (std::size_t i = 0; i < 5; ++i) {
        EXPECT_NEAR(b.base_samples_s[i], s.base_samples_s[i], 1e-15);
        EXPECT_NEAR(b.candidate_samples_s[i], s.candidate_samples_s[i], 1e-15);
    }
    ASSERT_TRUE(b.base_s && b.candidate_s && b.verdict);
    EXPECT_NEAR(b.base_s->median, s.base_s->median, 1e-15);
    EXPECT_NEAR(b.candidate_s->p90, s.candidate_s->p90, 1e-15);
    EXPECT_EQ(b.candidate_s->n, 5u);
    EXPECT_DOUBLE_EQ(b.verdict->ci_low, 1.9);
    EXPECT_EQ(b.verdict->verdict, measure::ab_verdict::faster);
    EXPECT_FALSE(back.shapes[1].ok);
    EXPECT_EQ(back.shapes[1].error, "candidate crashed");
    EXPECT_FALSE(back.shapes[1].verdict.has_value());
    EXPECT_TRUE(back.shapes[1].base_samples_s.empty());
    ASSERT_TRUE(back.overall.has_value());
    EXPECT_DOUBLE_EQ(back.overall->speedup, 1.96);
    EXPECT_DOUBLE_EQ(back.config.min_effect, 0.03);
    EXPECT_EQ(back.env.host_cpu, "Test CPU");
    EXPECT_EQ(back.env.logical_cpus, 4u);
}

TEST(ReportPageTest, FinalClaimIsReadFromFinalResultOrAbsent) {
    platform::scoped_temp_dir dir("kloop-report-page-test");
    const auto file = dir.path() / "final_result.json";
    EXPECT_FALSE(loop::read_final_claim(file).has_value());
    const nlohmann::json body = {{"verdict", {{"promote", false}, {"best", 0}, {"text", "NO PROMOTION: none"}, {"criteria", {"[ ] a"}}}},
                                 {"ab", nullptr}};
    loop::write_record(file, "kloop.final_result", body, {{"kloop", "report"}, {}});
    const auto f = loop::read_final_claim(file);
    ASSERT_TRUE(f.has_value());
    EXPECT_FALSE(f->promote);
    EXPECT_EQ(f->verdict, "NO PROMOTION: none");
    EXPECT_EQ(f->criteria, std::vector<std::string>{"[ ] a"});
    EXPECT_FALSE(f->ab.has_value());
    EXPECT_FALSE(f->written_at.empty());
    EXPECT_EQ(f->command_line, (std::vector<std::string>{"kloop", "report"}));
    // Another kind of record is refused, naming the file.
    loop::write_record(file, "kloop.run_manifest", body, {});
    try {
        (void)loop::read_final_claim(file);
        ADD_FAILURE() << "a manifest was read as a final result";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("final_result.json"), std::string::npos) << e.what();
    }
}
