// Unit under test: profile/profile_summary — totals, the dominant kernel, the roofline of the call
// (datasheet or given peaks, % of floor, re-read factor, below-floor suspicion), the JSON record's
// keys and the markdown page, on the recorded H200 capture and synthetic several-kernel ones.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "profile/ncu_csv.hpp"
#include "profile/ncu_details.hpp"
#include "profile/profile_summary.hpp"
#include "report/profile_report.hpp"
#include "profile_test_util.hpp"

using namespace kloop::profile;
using namespace kloop::profile::testing;
using kloop::report::to_markdown;

namespace {

std::vector<kernel_profile> v0_kernels() {
    return profiles_from_table(parse_ncu_raw_csv(read_text(data_path(v0_raw_name)), v0_raw_name));
}

// rmsnorm fwd, N = 16384, D = 8192 (examples/rmsnorm-cuda/op.toml).
roofline_input v0_roofline() {
    const double n = 16384, d = 8192;
    return {"r16384_h8192", 4 * n * d, 2 * (2 * n * d + d) + 4 * n, false, std::nullopt, 1};
}

// Two kernels of one backward call (bytes read/write measured) plus a tiny one.
std::vector<kernel_profile> bwd_kernels() {
    const std::vector<std::pair<std::string, std::string>> metrics{
        {"gpu__time_duration.sum", "usecond"},
        {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "%"},
        {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%"},
        {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "%"},
        {"dram__bytes_read.sum", "Mbyte"},
        {"dram__bytes_write.sum", "Mbyte"},
        {"device__attribute_display_name", ""}};
    auto k = [](std::string name, std::string us, std::string sm, std::string mem, std::string dram, std::string rd,
                std::string wr) {
        synth_kernel s;
        s.name = std::move(name);
        s.values = {{"gpu__time_duration.sum", us},
                    {"sm__throughput.avg.pct_of_peak_sustained_elapsed", sm},
                    {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", mem},
                    {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", dram},
                    {"dram__bytes_read.sum", rd},
                    {"dram__bytes_write.sum", wr},
                    {"device__attribute_display_name", "NVIDIA H200"}};
        return s;
    };
    return profiles_from_table(parse_ncu_raw_csv(
        make_raw_csv(metrics, {k("dx_kernel(const __nv_bfloat16 *, int)", "300", "20", "85", "84", "1,000", "500"),
                               k("dw_kernel(const __nv_bfloat16 *, int)", "100", "15", "70", "65", "400", "0.5"),
                               k("void tiny<float>(float *)", "3", "5", "5", "1", "0", "0")}),
        "bwd.csv"));
}

}  // namespace

TEST(ProfileSummaryTest, RecordedCaptureWithDatasheetRoofline) {
    summary_input in;
    in.kernels = v0_kernels();
    in.roofline = v0_roofline();
    in.source = "profile/v0/fwd.raw.csv";
    const profile_summary s = summarize_profile(in);
    EXPECT_EQ(s.device_name, "NVIDIA H200");
    ASSERT_EQ(s.kernels.size(), 1u);
    EXPECT_DOUBLE_EQ(s.total_duration_ns, 2640960.0);
    EXPECT_EQ(s.dominant, 0u);
    EXPECT_EQ(s.kernels[0].share_of_time, 1.0);
    EXPECT_TRUE(s.dram_bytes_derived);
    EXPECT_EQ(s.kernels[0].diag.kind, bound::memory);
    EXPECT_EQ(s.kernels[0].diag.level, memory_level::cache);

    ASSERT_TRUE(s.roofline.has_value());
    const auto& r = *s.roofline;
    EXPECT_EQ(r.peaks.source, peak_source::datasheet);  // no peaks given: the H200 datasheet entry
    EXPECT_EQ(r.peaks.dram_bytes_per_s, 4.8e12);
    EXPECT_EQ(r.point.bound, roofline_bound::memory);
    EXPECT_NEAR(r.point.floor_ns, 111865.17, 0.01);
    EXPECT_DOUBLE_EQ(*r.profiled_ns, 2640960.0);
    EXPECT_NEAR(*r.profiled_pct_of_floor, 4.2358, 1e-4);
    EXPECT_FALSE(r.measured_ns.has_value());
    EXPECT_NEAR(*r.reread_factor, 1.5642, 1e-4);
    EXPECT_TRUE(r.dram_bytes_derived);
    EXPECT_FALSE(r.profiled_below_floor);
    // The call's one kernel: the re-read factor reaches its diagnosis as evidence.
    bool has_reread = false;
    for (const auto& e : s.kernels[0].diag.evidence) has_reread = has_reread || e.signal == "re-read factor";
    EXPECT_TRUE(has_reread);
}

TEST(ProfileSummaryTest, JsonRecordKeys) {
    summary_input in;
    in.kernels = v0_kernels();
    in.roofline = v0_roofline();
    in.roofline->measured_ns = 2.5e6;
    in.source = "fwd.raw.csv";
    const auto j = to_json(summarize_profile(in));
    EXPECT_EQ(j.at("schema_version"), 1);
    EXPECT_EQ(j.at("kind"), "kloop.profile_summary");
    EXPECT_EQ(j.at("source"), "fwd.raw.csv");
    EXPECT_EQ(j.at("device"), "NVIDIA H200");
    EXPECT_EQ(j.at("totals").at("kernels"), 1);
    EXPECT_DOUBLE_EQ(j.at("totals").at("duration_ns").get<double>(), 2640960.0);
    EXPECT_EQ(j.at("totals").at("dram_bytes_derived"), true);
    EXPECT_EQ(j.at("dominant_kernel").at("index"), 0);
    EXPECT_EQ(j.at("dominant_kernel").at("short_name"), "fwd_kernel");
    EXPECT_EQ(j.at("dominant_kernel").at("bound"), "memory-bound");
    const auto& k = j.at("kernels").at(0);
    EXPECT_EQ(k.at("short_name"), "fwd_kernel");
    EXPECT_EQ(k.at("memory_throughput_pct"), 67.273797);
    EXPECT_EQ(k.at("diagnosis").at("bound"), "memory-bound");
    EXPECT_EQ(k.at("diagnosis").at("memory_level"), "l1-l2");
    EXPECT_TRUE(k.at("dram_bytes_read").is_null());
    const auto& r = j.at("roofline");
    EXPECT_EQ(r.at("shape"), "r16384_h8192");
    EXPECT_EQ(r.at("peaks").at("source"), "datasheet");
    EXPECT_EQ(r.at("bound"), "memory");
    EXPECT_EQ(r.at("measured_ns"), 2.5e6);
    EXPECT_NEAR(r.at("measured_pct_of_floor").get<double>(), 111865.17 / 2.5e6 * 100, 1e-6);
    EXPECT_EQ(r.at("suspect_margin"), 0.10);
    EXPECT_EQ(r.at("measured_below_floor"), false);
    for (const char* key : {"flops", "bytes", "uses_tensor_cores", "memory_time_ns", "compute_time_ns", "floor_ns",
                            "arithmetic_intensity", "ridge_point", "calls_profiled", "profiled_ns", "profiled_pct_of_floor",
                            "dram_bytes", "dram_bytes_derived", "reread_factor", "profiled_below_floor", "notes"})
        EXPECT_TRUE(r.contains(key)) << key;
    EXPECT_TRUE(j.at("notes").is_array());
}

TEST(ProfileSummaryTest, SeveralKernelsTotalsAndDominant) {
    summary_input in;
    in.kernels = bwd_kernels();
    const profile_summary s = summarize_profile(in);
    ASSERT_EQ(s.kernels.size(), 3u);
    EXPECT_DOUBLE_EQ(s.total_duration_ns, 403000.0);
    EXPECT_EQ(s.kernels_with_duration, 3u);
    EXPECT_EQ(s.dominant, 0u);
    EXPECT_NEAR(*s.kernels[0].share_of_time, 300.0 / 403.0, 1e-12);
    double share = 0;
    for (const auto& k : s.kernels) share += *k.share_of_time;
    EXPECT_NEAR(share, 1.0, 1e-12);
    EXPECT_DOUBLE_EQ(*s.total_dram_bytes, 1.5e9 + 400.5e6);
    EXPECT_FALSE(s.dram_bytes_derived);
    EXPECT_FALSE(s.roofline.has_value());  // no roofline input
    EXPECT_EQ(s.kernels[0].diag.kind, bound::memory);
    EXPECT_EQ(s.kernels[0].diag.level, memory_level::dram);
    EXPECT_EQ(s.kernels[2].diag.kind, bound::launch);
    EXPECT_TRUE(to_json(s).at("roofline").is_null());
}

TEST(ProfileSummaryTest, CallsProfiledAndGivenPeaks) {
    summary_input in;
    in.kernels = bwd_kernels();
    in.kernels.pop_back();  // dx + dw: one call... captured twice
    in.kernels.push_back(in.kernels[0]);
    in.kernels.push_back(in.kernels[1]);
    in.peaks = device_peaks{"NVIDIA H200", 4.4e12, 60e12, 790e12, peak_source::calibrated};
    in.roofline = roofline_input{"r8192_h8192", 8.0 * 8192 * 8192, 2.0 * (3 * 8192 * 8192 + 2 * 8192) + 4 * 8192, false,
                                 500e3, 2};
    const profile_summary s = summarize_profile(in);
    ASSERT_TRUE(s.roofline.has_value());
    const auto& r = *s.roofline;
    EXPECT_EQ(r.peaks.source, peak_source::calibrated);
    EXPECT_DOUBLE_EQ(*r.profiled_ns, 400000.0);  // 800 µs over 2 calls
    EXPECT_DOUBLE_EQ(*r.dram_bytes, 1.5e9 + 400.5e6);
    const double bytes = 2.0 * (3 * 8192 * 8192 + 2 * 8192) + 4 * 8192;
    EXPECT_NEAR(*r.reread_factor, (1.5e9 + 400.5e6) / bytes, 1e-12);
    EXPECT_NEAR(r.point.floor_ns, bytes / 4.4e12 * 1e9, 1e-6);
    EXPECT_NEAR(*r.measured_pct_of_floor, r.point.floor_ns / 500e3 * 100, 1e-9);
    // Several kernels per call: the call's re-read factor is not one kernel's evidence.
    for (const auto& k : s.kernels)
        for (const auto& e : k.diag.evidence) EXPECT_NE(e.signal, "re-read factor");
    in.roofline->calls_profiled = 0;
    EXPECT_THROW((void)summarize_profile(in), kloop::usage_error);
}

TEST(ProfileSummaryTest, BelowTheFloorIsSuspect) {
    summary_input in;
    in.kernels = v0_kernels();
    in.roofline = v0_roofline();
    in.roofline->measured_ns = 90e3;  // faster than the 112 µs floor by 20 %
    const profile_summary s = summarize_profile(in);
    ASSERT_TRUE(s.roofline.has_value());
    EXPECT_TRUE(s.roofline->measured_below_floor);
    EXPECT_FALSE(s.roofline->profiled_below_floor);
    bool noted = false;
    for (const auto& n : s.roofline->notes) noted = noted || n.find("faster than the floor") != std::string::npos;
    EXPECT_TRUE(noted);
    EXPECT_NE(to_markdown(s).find("below the floor: suspect"), std::string::npos);
    in.roofline->measured_ns = 0;
    EXPECT_THROW((void)summarize_profile(in), kloop::usage_error);
}

TEST(ProfileSummaryTest, UnknownDeviceWithoutPeaksHasNoRoofline) {
    auto ks = bwd_kernels();
    for (auto& k : ks) k.device_name = "NVIDIA GeForce RTX 4090";
    summary_input in;
    in.kernels = ks;
    in.roofline = v0_roofline();
    const profile_summary s = summarize_profile(in);
    EXPECT_FALSE(s.roofline.has_value());
    ASSERT_FALSE(s.notes.empty());
    EXPECT_NE(s.notes.back().find("no datasheet entry for device 'NVIDIA GeForce RTX 4090'"), std::string::npos);
}

TEST(ProfileSummaryTest, MissingDramBytesAndEmptyCapture) {
    auto ks = bwd_kernels();
    ks[1].dram_bytes.reset();
    summary_input in;
    in.kernels = ks;
    const profile_summary s = summarize_profile(in);
    EXPECT_FALSE(s.total_dram_bytes.has_value());
    EXPECT_TRUE(to_json(s).at("totals").at("dram_bytes").is_null());
    EXPECT_FALSE(s.notes.empty());

    const profile_summary e = summarize_profile(summary_input{});
    EXPECT_TRUE(e.kernels.empty());
    EXPECT_FALSE(e.dominant.has_value());
    EXPECT_TRUE(to_json(e).at("dominant_kernel").is_null());
    EXPECT_NE(e.notes.at(0).find("no kernels"), std::string::npos);
    EXPECT_NE(to_markdown(e).find("# Profile summary"), std::string::npos);
}

TEST(ProfileSummaryTest, MarkdownTableAndDiagnosis) {
    summary_input in;
    in.kernels = v0_kernels();
    in.roofline = v0_roofline();
    const std::string md = to_markdown(summarize_profile(in));
    EXPECT_NE(md.find("| # | kernel |"), std::string::npos);
    EXPECT_NE(md.find("| 0 | `fwd_kernel` | 128 × 128 | 2.64 ms | 100 % | 3.7 | 67.3 | 6.6 | 318 GB/s | 6.2 / 100 | 0.06 | 29 | "
                      "memory-bound (L1/L2) |"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("## Roofline (shape `r16384_h8192`)"), std::string::npos) << md;
    EXPECT_NE(md.find("| floor | 111.9 \xC2\xB5s (memory-bound"), std::string::npos) << md;
    EXPECT_NE(md.find("4.2 % of floor"), std::string::npos) << md;
    EXPECT_NE(md.find("re-read factor 1.56"), std::string::npos) << md;
    EXPECT_NE(md.find("**memory-bound (L1/L2, not DRAM)"), std::string::npos) << md;
    EXPECT_NE(md.find("docs/knowledge-base.md#mem-coalescing"), std::string::npos) << md;
    EXPECT_NE(md.find("long_scoreboard 44.74 (93 %)"), std::string::npos) << md;
    EXPECT_NE(md.find("| duration | 2.64 ms | < 10 \xC2\xB5s (launch-bound) | no |"), std::string::npos) << md;
    EXPECT_NE(md.find("| DRAM throughput | 6.6 % | >= 0.8 x memory = 53.8 % (DRAM, else L1/L2) | no |"), std::string::npos)
        << md;
}

TEST(ProfileSummaryTest, NcuRulesFromTheDetailsPage) {
    summary_input in;
    in.kernels = v0_kernels();
    in.rules = parse_ncu_details_csv(read_text(data_path(v0_details_name)), v0_details_name).rules;
    ncu_rule_result other;
    other.kernel_id = "7";  // no such kernel in the capture
    other.rule = "Elsewhere";
    other.type = "OPT";
    in.rules.push_back(other);
    const profile_summary s = summarize_profile(in);
    ASSERT_EQ(s.kernels.size(), 1u);
    EXPECT_EQ(s.kernels[0].rules.size(), 7u);
    const auto j = to_json(s);
    EXPECT_EQ(j.at("kernels").at(0).at("ncu_rules").size(), 7u);
    const std::string md = to_markdown(s);
    EXPECT_NE(md.find("- [OPT] CPIStall (est. speedup 32.7 %): On average, each warp"), std::string::npos) << md;
    EXPECT_EQ(md.find("Check the Warp Stall Sampling"), std::string::npos) << md;  // INF rules left out
    EXPECT_EQ(md.find("Elsewhere"), std::string::npos) << md;
    // Without rules the key is still there, empty.
    summary_input bare;
    bare.kernels = v0_kernels();
    EXPECT_TRUE(to_json(summarize_profile(bare)).at("kernels").at(0).at("ncu_rules").empty());
}

TEST(ProfileSummaryTest, ShortKernelNames) {
    EXPECT_EQ(short_kernel_name("<unnamed>::fwd_kernel(const __nv_bfloat16 *, int)"), "fwd_kernel");
    EXPECT_EQ(short_kernel_name("(anonymous namespace)::k(int)"), "k");
    EXPECT_EQ(short_kernel_name("void cutlass::Kernel<Gemm<int, 2>>(Params)"), "cutlass::Kernel<Gemm<int, 2>>");
    EXPECT_EQ(short_kernel_name("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN"), "nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN");
    EXPECT_EQ(short_kernel_name(""), "");
}
