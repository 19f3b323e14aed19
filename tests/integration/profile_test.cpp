// Unit under test: `kloop profile` end to end without a GPU — the capture step's command line,
// the CSV re-read, the parse, the summary files and the exit codes — with a stand-in for ncu
// (tests/fixtures/fake_ncu/ncu) that replays captures recorded on an H200. The real ncu path is
// covered by tests/gpu/gpu_profile_test.cpp on the GPU machine.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "eval/evaluator.hpp"
#include "eval/profile_capture.hpp"
#include "integration/kloop_process.hpp"
#include "platform/file_io.hpp"
#include "platform/preflight.hpp"
#include "platform/subprocess.hpp"
#include "spec/spec_loader.hpp"

namespace fs = std::filesystem;
using kloop::testing::run_kloop;
using kloop::testing::source_dir;

namespace {

class ProfileTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (kloop::platform::find_tool("nvcc").empty()) GTEST_SKIP() << "no nvcc: the CUDA op cannot be built";
        ::setenv("KLOOP_NCU", (source_dir() + "/tests/fixtures/fake_ncu/ncu").c_str(), 1);
        ::setenv("FAKE_NCU_CSV", (source_dir() + "/tests/data/ncu/v2_fwd_r16384_h8192_full.raw.csv").c_str(), 1);
        ::unsetenv("FAKE_NCU_MODE");
    }
    void TearDown() override {
        ::unsetenv("KLOOP_NCU");
        ::unsetenv("FAKE_NCU_CSV");
        ::unsetenv("FAKE_NCU_MODE");
    }
    kloop::testing::kloop_run profile(const std::vector<std::string>& extra) {
        std::vector<std::string> args = {"profile", source_dir() + "/tests/gpu/data/copy", "--candidate",
                                         source_dir() + "/tests/gpu/data/copy/versions/copy_v1.cu", "--no-gate",
                                         "--out", m_out.path().string(), "--json"};
        args.insert(args.end(), extra.begin(), extra.end());
        return run_kloop(args, 300);
    }
    kloop::platform::scoped_temp_dir m_out{"kloop-profile-test"};
};

}  // namespace

TEST_F(ProfileTest, CapturesParsesAndWritesTheSummary) {
    const auto r = profile({"--shape", "n32m", "--set", "targeted", "--set", "full"});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_EQ(r.record.at("status"), "full");
    ASSERT_EQ(r.record.at("captures").size(), 2u);
    for (const auto& c : r.record.at("captures")) {
        EXPECT_EQ(c.at("status"), "captured") << c.dump(1);
        const auto argv = c.at("ncu_argv").get<std::vector<std::string>>();
        // kloop never changes the GPU's clocks, and profiles only the profiler range.
        EXPECT_NE(std::find(argv.begin(), argv.end(), "--clock-control"), argv.end());
        EXPECT_NE(std::find(argv.begin(), argv.end(), "--profile-from-start"), argv.end());
        EXPECT_TRUE(fs::exists(m_out.path() / c.at("raw_csv").get<std::string>()));
        ASSERT_TRUE(c.at("summary").is_object());
        EXPECT_EQ(c.at("summary").at("kernels").size(), 1u);
    }
    // The replayed capture is the H200's v2 forward kernel: DRAM-bound.
    EXPECT_EQ(r.record.at("bound"), "memory-bound");
    EXPECT_NE(r.record.at("note").get<std::string>().find("DRAM"), std::string::npos) << r.record.at("note");
    EXPECT_TRUE(fs::exists(m_out.path() / "profile_summary.json"));
    EXPECT_TRUE(fs::exists(m_out.path() / "profile_summary.md"));
}

// A census name that matches nothing under ncu's -k filter: one retry without the filter, and the
// capture is judged by that retry alone (the first run's "No kernels were profiled" stays in the
// log, not in the verdict).
TEST_F(ProfileTest, AFilterThatMatchesNothingIsRetriedWithoutItAndTheRetryCounts) {
    ::setenv("FAKE_NCU_MODE", "filter_nomatch", 1);
    const std::string dir = source_dir() + "/tests/gpu/data/copy";
    const auto spec = kloop::spec::load_op_spec(dir);
    kloop::platform::posix_command_runner commands;
    kloop::platform::scoped_temp_dir scratch("kloop-profile-retry");
    const kloop::eval::evaluation_context ctx{spec, dir + "/versions/copy_v1.cu", {}, commands, scratch.path() / "cache",
                                              scratch.path()};
    kloop::eval::profile_request req;
    req.mode = "fwd";
    req.shape = "n32m";
    req.out_dir = m_out.path();
    req.kernel_names = {"_Z11not_the_onePf"};
    req.timeout_s = 120;
    const auto cap = kloop::eval::capture_profile(ctx, req);
    EXPECT_EQ(cap.status, "captured") << cap.reason;
    ASSERT_FALSE(cap.ncu_argv.empty());
    EXPECT_EQ(std::find(cap.ncu_argv.begin(), cap.ncu_argv.end(), "-k"), cap.ncu_argv.end()) << "the retry has no filter";
    const auto log = kloop::platform::read_file(cap.log);
    EXPECT_NE(log.find("retried without it"), std::string::npos) << log;
    EXPECT_NE(log.find("No kernels were profiled"), std::string::npos) << log;
    EXPECT_TRUE(fs::exists(cap.raw_csv));
}

TEST_F(ProfileTest, NoCounterPermissionIsOneClearLineAndExitSix) {
    ::setenv("FAKE_NCU_MODE", "noperm", 1);
    const auto r = profile({"--set", "targeted", "--set", "full"});
    EXPECT_EQ(r.exit_code, 6) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_EQ(r.record.at("status"), "unavailable");
    EXPECT_EQ(r.record.at("captures").size(), 1u) << "no second capture after an unavailable one";
    EXPECT_NE(r.err.find("CAP_SYS_ADMIN"), std::string::npos) << r.err;
}

TEST_F(ProfileTest, AnUnknownShapeIsAUsageError) {
    const auto r = profile({"--shape", "n1000"});  // a gate-only shape
    EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
    EXPECT_NE(r.err.find("--shape 'n1000'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("n32m"), std::string::npos) << r.err;
}

TEST(ProfileCpuOpTest, ACpuOpIsNotProfiled) {
    kloop::platform::scoped_temp_dir out("kloop-profile-cpu");
    const auto r = run_kloop({"profile", kloop::testing::example_dir(), "--candidate",
                              kloop::testing::example_dir() + "/versions/v1_rowwise.cpp", "--no-gate", "--out",
                              out.path().string(), "--json"});
    EXPECT_EQ(r.exit_code, 6) << r.err << r.out;
    EXPECT_NE(r.err.find("needs a CUDA candidate"), std::string::npos) << r.err;
}
