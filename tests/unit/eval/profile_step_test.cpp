// Unit tests of the profile step's host logic: ncu's failure texts, the kernel filter, the peaks
// used by the roofline, the default shape and the loop's suspect rules on a recorded capture.
#include <gtest/gtest.h>

#include <regex>

#include <cstdlib>
#include <filesystem>

#include "eval/calibration.hpp"
#include "eval/profile_capture.hpp"
#include "eval/profile_step.hpp"
#include "platform/file_io.hpp"
#include "profile/kernel_profile.hpp"
#include "profile/ncu_csv.hpp"
#include "spec/spec_loader.hpp"

namespace fs = std::filesystem;
using namespace kloop;

namespace {

const fs::path k_data = fs::path(KLOOP_TEST_SOURCE_DIR) / "tests" / "data" / "ncu";

// The recorded v0 capture (H200, 2026-11-30): fwd on N=16384, D=8192.
profile::profile_summary recorded_v0_summary(std::optional<double> measured_ns) {
    const auto table = profile::parse_ncu_raw_csv(platform::read_file(k_data / "v0_fwd_r16384_h8192_targeted.raw.csv"), "v0");
    profile::summary_input in;
    in.kernels = profile::profiles_from_table(table);
    profile::roofline_input ri;
    ri.shape = "r16384_h8192";
    ri.bytes = 2.0 * (2.0 * 16384 * 8192 + 8192) + 4.0 * 16384;
    ri.flops = 4.0 * 16384 * 8192;
    ri.measured_ns = measured_ns;
    in.roofline = ri;
    return profile::summarize_profile(in);
}

eval::profile_entry entry_of(const std::string& set, profile::profile_summary s, std::optional<double> measured_ns,
                             double spec_bytes) {
    eval::profile_entry e;
    e.capture.mode = "fwd";
    e.capture.shape = "r16384_h8192";
    e.capture.set = set;
    e.capture.status = "captured";
    e.summary = std::move(s);
    e.measured_ns = measured_ns;
    e.spec_bytes = spec_bytes;
    e.spec_flops = 4.0 * 16384 * 8192;
    return e;
}

constexpr double k_v0_bytes = 2.0 * (2.0 * 16384 * 8192 + 8192) + 4.0 * 16384;

class scoped_home {
public:
    scoped_home() : m_dir("kloop-profile-test") { ::setenv("KLOOP_HOME", m_dir.path().c_str(), 1); }
    ~scoped_home() { ::unsetenv("KLOOP_HOME"); }
    [[nodiscard]] const fs::path& path() const { return m_dir.path(); }

private:
    platform::scoped_temp_dir m_dir;
};

}  // namespace

TEST(NcuOutput, CounterPermissionIsUnavailableWithTheFix) {
    const auto d = eval::diagnose_ncu_output(
        "==PROF== Connected to process 905\n==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access "
        "NVIDIA GPU Performance Counters on the target device 0\n",
        1, false);
    EXPECT_EQ(d.outcome, eval::ncu_outcome::no_permission);
    EXPECT_NE(d.message.find("CAP_SYS_ADMIN"), std::string::npos);
}

TEST(NcuOutput, NoKernelsListsTheAvailableNames) {
    const auto d = eval::diagnose_ncu_output(
        "==WARNING== No kernels were profiled.\nAvailable Kernels:\n  1. fwd_kernel\n  2. dw_reduce_kernel\n"
        "==PROF== Disconnected\n",
        0, false);
    EXPECT_EQ(d.outcome, eval::ncu_outcome::no_kernels);
    ASSERT_EQ(d.available_kernels.size(), 2u);
    EXPECT_EQ(d.available_kernels[1], "dw_reduce_kernel");
    EXPECT_NE(d.message.find("fwd_kernel, dw_reduce_kernel"), std::string::npos);
}

TEST(NcuOutput, ApplicationErrorIsAFailureWithNcuLine) {
    // Recorded on the H200: the gate under ncu timed out, the runner exited 3.
    const auto d = eval::diagnose_ncu_output(
        "result: REJECTED: the gate is red\n==ERROR== The application returned an error code (3).\n"
        "==ERROR== Could not open report file '/root/out/v1.ncu-rep'.\n",
        3, false);
    EXPECT_EQ(d.outcome, eval::ncu_outcome::failed);
    EXPECT_EQ(d.message, "ncu: The application returned an error code (3).");
}

TEST(NcuOutput, CleanRunWithAReportIsOk) {
    const auto log = "==WARNING== Note: Running with unmodified GPU clocks.\n==PROF== Profiling \"fwd_kernel\": 0%....100% - 18 passes\n";
    EXPECT_EQ(eval::diagnose_ncu_output(log, 0, true).outcome, eval::ncu_outcome::ok);
    EXPECT_EQ(eval::diagnose_ncu_output(log, 0, false).outcome, eval::ncu_outcome::failed);
    EXPECT_EQ(eval::diagnose_ncu_output(log, 2, true).outcome, eval::ncu_outcome::failed);
}

TEST(KernelFilter, EscapesAndAnchorsMangledNames) {
    EXPECT_EQ(eval::kernel_filter_regex({}), "");
    EXPECT_EQ(eval::kernel_filter_regex({"_Z3fooPf", "_ZN12_GLOBAL__N_1.3barEv"}),
              "regex:^(_Z3fooPf|_ZN12_GLOBAL__N_1\\.3barEv)$");
}

// nvcc's anonymous-namespace prefix carries a hash of the source's path: the census saw the
// kernel built from one folder, the loop profiles the snapshot built in iter_vN/.
TEST(KernelFilter, MatchesTheSameKernelBuiltFromAnotherFolder) {
    const std::string seen = "_ZN41_GLOBAL__N__fe6f83a5_9_kernel_cu_4abc59ab10fwd_kernelEPK13__nv_bfloat16S2_PS0_Pfiif";
    const std::string other = "_ZN41_GLOBAL__N__a2a48c14_9_kernel_cu_4abc59ab10fwd_kernelEPK13__nv_bfloat16S2_PS0_Pfiif";
    const auto k = eval::kernel_filter_regex({seen, "_Z3fooPf"});
    ASSERT_EQ(k.rfind("regex:", 0), 0u) << k;
    const std::regex re(k.substr(6));
    EXPECT_TRUE(std::regex_match(seen, re)) << k;
    EXPECT_TRUE(std::regex_match(other, re)) << k;
    EXPECT_TRUE(std::regex_match(std::string("_Z3fooPf"), re)) << k;
    EXPECT_FALSE(std::regex_match(std::string("_ZN41_GLOBAL__N__a2a48c14_9_kernel_cu_4abc59ab10bwd_kernelEv"), re)) << k;
    EXPECT_FALSE(std::regex_match(std::string("_Z3fooPfX"), re)) << k;
}

TEST(ProfileSets, NamesRoundTripAndSelectSections) {
    for (const auto* n : {"targeted", "full", "source"}) EXPECT_EQ(eval::to_string(*eval::profile_set_from_string(n)), n);
    EXPECT_FALSE(eval::profile_set_from_string("detailed"));
    const auto t = eval::ncu_set_arguments(eval::profile_set::targeted);
    EXPECT_NE(std::find(t.begin(), t.end(), "WarpStateStats"), t.end());
    const auto s = eval::ncu_set_arguments(eval::profile_set::source);
    EXPECT_NE(std::find(s.begin(), s.end(), "--import-source"), s.end());
}

TEST(Peaks, SuspectUsesTheLargerOfCalibratedAndDatasheet) {
    const auto ds = profile::datasheet_peaks("NVIDIA H200");
    ASSERT_TRUE(ds);
    profile::device_peaks cal = *ds;
    cal.source = profile::peak_source::calibrated;
    cal.dram_bytes_per_s = 4.2e12;      // below the datasheet
    cal.tensor_flops_per_s = 600e12;    // mma.sync: below wgmma's datasheet rate
    cal.fp32_flops_per_s = 70e12;       // above
    const auto r = eval::combine_peaks(cal, ds);
    ASSERT_TRUE(r.report && r.suspect);
    EXPECT_EQ(r.report->source, profile::peak_source::calibrated);
    EXPECT_DOUBLE_EQ(r.report->dram_bytes_per_s, 4.2e12);
    EXPECT_DOUBLE_EQ(r.suspect->dram_bytes_per_s, ds->dram_bytes_per_s);
    EXPECT_DOUBLE_EQ(r.suspect->tensor_flops_per_s, ds->tensor_flops_per_s);
    EXPECT_DOUBLE_EQ(r.suspect->fp32_flops_per_s, 70e12);
    const auto none = eval::combine_peaks(std::nullopt, std::nullopt);
    EXPECT_FALSE(none.report);
    EXPECT_FALSE(none.suspect);
}

TEST(Calibration, PeaksFromTheBenchAndTheCacheRoundTrip) {
    scoped_home home;
    eval::evaluation ev;
    auto shape = [](const char* mode, std::optional<double> bytes, std::optional<double> flops, double median) {
        eval::bench_shape_report s;
        s.mode = mode;
        s.shape = "peak";
        s.ok = true;
        s.bytes = bytes;
        s.flops = flops;
        measure::sample_summary st;
        st.median = median;
        s.stats_s = st;
        return s;
    };
    ev.bench.shapes = {shape("copy", 8.0 * 67108864, std::nullopt, 125e-6), shape("fma", std::nullopt, 2e12, 0.04),
                       shape("mma", std::nullopt, 6e12, 0.01)};
    const auto p = eval::peaks_from_calibration(ev, "NVIDIA H200");
    EXPECT_NEAR(p.dram_bytes_per_s, 8.0 * 67108864 / 125e-6, 1.0);
    EXPECT_NEAR(p.fp32_flops_per_s, 50e12, 1.0);
    EXPECT_NEAR(p.tensor_flops_per_s, 600e12, 1.0);
    eval::save_calibration(p, "2026-11-30T00:00:00Z");
    EXPECT_TRUE(fs::exists(home.path() / "calibration" / "NVIDIA_H200.json"));
    const auto back = eval::load_calibration("NVIDIA H200");
    ASSERT_TRUE(back);
    EXPECT_DOUBLE_EQ(back->dram_bytes_per_s, p.dram_bytes_per_s);
    EXPECT_EQ(back->source, profile::peak_source::calibrated);
    EXPECT_FALSE(eval::load_calibration("NVIDIA A100"));

    ev.bench.shapes[1].ok = false;
    ev.bench.shapes[1].error = "runner timed out";
    try {
        (void)eval::peaks_from_calibration(ev, "NVIDIA H200");
        FAIL() << "expected an error";
    } catch (const usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("'fma'"), std::string::npos);
    }
}

TEST(Calibration, ACorruptCacheNamesItsFile) {
    scoped_home home;
    platform::ensure_directory(home.path() / "calibration");
    platform::write_file_atomic(home.path() / "calibration" / "NVIDIA_H200.json", "{\"device\": \"NVIDIA H200\"}");
    try {
        (void)eval::load_calibration("NVIDIA H200");
        FAIL() << "expected an error";
    } catch (const usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("NVIDIA_H200.json"), std::string::npos);
    }
}

TEST(DefaultShape, PicksTheBenchShapeWithTheMostBytes) {
    const auto spec = spec::load_op_spec(fs::path(KLOOP_TEST_SOURCE_DIR) / "examples" / "rmsnorm-cuda");
    EXPECT_EQ(eval::default_profile_shape(spec, "fwd"), "r16384_h8192");
    EXPECT_EQ(eval::default_profile_shape(spec, "bwd"), "r16384_h8192");
    EXPECT_THROW((void)eval::default_profile_shape(spec, "nope"), usage_error);
}

TEST(SuspectRules, HonestRecordedCaptureIsNotSuspectAndNamesItsBound) {
    scoped_home home;  // no calibration: datasheet peaks
    eval::profile_step_result r;
    r.entries.push_back(entry_of("targeted", recorded_v0_summary(2.649e6), 2.649e6, k_v0_bytes));
    eval::judge_profiles(r);
    EXPECT_FALSE(r.suspect) << (r.suspect_reasons.empty() ? "" : r.suspect_reasons.front());
    EXPECT_EQ(r.status, "targeted");  // no full capture of the target
    EXPECT_FALSE(r.bound.empty());
    EXPECT_NE(r.note.find("fwd r16384_h8192"), std::string::npos);
}

TEST(SuspectRules, FullCaptureOfEveryTargetMakesStatusFull) {
    scoped_home home;
    eval::profile_step_result r;
    r.entries.push_back(entry_of("targeted", recorded_v0_summary(2.649e6), 2.649e6, k_v0_bytes));
    r.entries.push_back(entry_of("full", recorded_v0_summary(2.649e6), 2.649e6, k_v0_bytes));
    eval::judge_profiles(r);
    EXPECT_EQ(r.status, "full");
    EXPECT_EQ(r.headline_entry, std::optional<std::size_t>(1));  // the note describes the full capture
}

TEST(SuspectRules, OverDeclaredBytesPutTheTimeBelowTheFloor) {
    scoped_home home;
    // The planted suspect: the spec claims 20x the bytes (10.7 GB), so the floor at the H200's
    // 4.8 TB/s is 2.24 ms and a 1.0 ms median is below it by far more than the 10 % margin; the
    // 0.84 GB the kernel moved (ncu) is also under half of what the spec claims.
    const double claimed = 20 * k_v0_bytes;
    eval::profile_step_result r;
    r.entries.push_back(entry_of("targeted", recorded_v0_summary(1.0e6), 1.0e6, claimed));
    eval::judge_profiles(r);
    ASSERT_TRUE(r.suspect);
    bool below = false, collapsed = false;
    for (const auto& s : r.suspect_reasons) {
        below = below || s.rfind("below_floor", 0) == 0;
        collapsed = collapsed || s.rfind("bytes_collapsed", 0) == 0;
    }
    EXPECT_TRUE(below);
    EXPECT_TRUE(collapsed);
}

TEST(SuspectRules, NoParsedCaptureReportsWhy) {
    eval::profile_step_result r;
    eval::profile_entry e;
    e.capture.mode = "fwd";
    e.capture.shape = "s";
    e.capture.set = "targeted";
    e.capture.status = "unavailable";
    e.capture.reason = "ncu (Nsight Compute) not found";
    r.entries.push_back(e);
    eval::judge_profiles(r);
    EXPECT_EQ(r.status, "unavailable");
    EXPECT_EQ(r.note, "ncu (Nsight Compute) not found");
    EXPECT_FALSE(r.suspect);
    EXPECT_FALSE(r.headline_entry);
}

TEST(SuspectRules, AnOpWithoutFlopsIsJudgedOnBytesAlone) {
    // The copy op declares bytes only; its profile carries a measured time (the loop's case).
    scoped_home home;
    const auto table = profile::parse_ncu_raw_csv(platform::read_file(k_data / "v0_fwd_r16384_h8192_targeted.raw.csv"), "v0");
    profile::summary_input in;
    in.kernels = profile::profiles_from_table(table);
    profile::roofline_input ri;
    ri.shape = "n32m";
    ri.bytes = 20 * k_v0_bytes;
    ri.measured_ns = 1.0e6;
    in.roofline = ri;
    eval::profile_step_result r;
    auto e = entry_of("targeted", profile::summarize_profile(in), 1.0e6, 20 * k_v0_bytes);
    e.spec_flops.reset();
    r.entries.push_back(std::move(e));
    eval::judge_profiles(r);
    EXPECT_EQ(r.status, "targeted");
    EXPECT_TRUE(r.suspect);
}

// timer_below_profiler: the bench median against ncu's gpu__time_duration of the same call.
TEST(SuspectRules, AMedianFarUnderNcusKernelTimeIsSuspect) {
    scoped_home home;
    // v0's recorded capture: one kernel, 2.641 ms in ncu. A bench median of 1.2 ms (within the
    // roofline: 0.54 GB at 4.8 TB/s is 0.11 ms) cannot be that call's time.
    eval::profile_step_result r;
    r.entries.push_back(entry_of("targeted", recorded_v0_summary(1.2e6), 1.2e6, k_v0_bytes));
    eval::judge_profiles(r);
    ASSERT_TRUE(r.suspect);
    bool found = false;
    for (const auto& s : r.suspect_reasons)
        if (s.rfind("timer_below_profiler: fwd/r16384_h8192", 0) == 0) {
            found = true;
            EXPECT_NE(s.find("2.641 ms"), std::string::npos) << s;
        }
    EXPECT_TRUE(found) << (r.suspect_reasons.empty() ? "" : r.suspect_reasons.front());
    for (const auto& s : r.suspect_reasons) EXPECT_NE(s.rfind("below_floor", 0), 0u) << s;
}

TEST(SuspectRules, AMedianNearNcusKernelTimeIsNotSuspect) {
    scoped_home home;
    // The recorded bench median (2.649 ms) and a little under it (ncu flushes every cache; the
    // bench can be a few % faster) are honest.
    for (const double measured : {2.649e6, 2.2e6}) {
        eval::profile_step_result r;
        r.entries.push_back(entry_of("targeted", recorded_v0_summary(measured), measured, k_v0_bytes));
        eval::judge_profiles(r);
        EXPECT_FALSE(r.suspect) << measured << ": " << (r.suspect_reasons.empty() ? "" : r.suspect_reasons.front());
    }
}

TEST(SuspectRules, TimerBelowProfilerMarginsDependOnTheKernelCount) {
    const double ncu = 100e3;  // 100 µs per call
    EXPECT_EQ(eval::timer_below_profiler("fwd/s", ncu * (1 - eval::profiler_margin_one_kernel), ncu, 1), "");
    EXPECT_NE(eval::timer_below_profiler("fwd/s", ncu * (1 - eval::profiler_margin_one_kernel) * 0.999, ncu, 1), "");
    // Several kernels: they may overlap on streams, or find each other's data in L2.
    EXPECT_EQ(eval::timer_below_profiler("fwd/s", 60e3, ncu, 3), "");
    EXPECT_EQ(eval::timer_below_profiler("fwd/s", ncu * (1 - eval::profiler_margin_several_kernels), ncu, 2), "");
    EXPECT_NE(eval::timer_below_profiler("fwd/s", ncu * (1 - eval::profiler_margin_several_kernels) * 0.999, ncu, 2), "");
    // Nothing to compare: no rule.
    EXPECT_EQ(eval::timer_below_profiler("fwd/s", 0, ncu, 1), "");
    EXPECT_EQ(eval::timer_below_profiler("fwd/s", 1e3, 0, 1), "");
}
