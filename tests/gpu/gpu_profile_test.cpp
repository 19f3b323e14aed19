// Unit under test: the Nsight Compute step end to end — `kloop profile` (runner profile phase under
// ncu, CSV re-read, parse, roofline, diagnosis), and a spec whose bytes are over-declared refused
// by the gate's physics floor before a loop starts from it. Label `gpu`; the binary's main (in
// gpu_copy_test.cpp) exits 77 without a GPU; the profile case skips without ncu.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "integration/kloop_process.hpp"
#include "platform/file_io.hpp"
#include "platform/preflight.hpp"

namespace fs = std::filesystem;
using kloop::testing::run_kloop;

namespace {

std::string copy_dir() { return kloop::testing::source_dir() + "/tests/gpu/data/copy"; }

}  // namespace

TEST(GpuProfileTest, ProfileCapturesParsesAndExplainsTheCopyKernel) {
    if (kloop::platform::find_tool("ncu").empty()) GTEST_SKIP() << "no ncu";
    kloop::platform::scoped_temp_dir out("kloop-gpu-profile");
    const auto r = run_kloop({"profile", copy_dir(), "--candidate", copy_dir() + "/versions/copy_v1.cu", "--shape", "n32m",
                              "--set", "targeted", "--set", "full", "--out", out.path().string(), "--json"},
                             900);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_EQ(r.record.at("status"), "full") << r.record.dump(1);
    EXPECT_FALSE(r.record.at("suspect").get<bool>()) << r.record.dump(1);
    ASSERT_EQ(r.record.at("captures").size(), 2u);
    for (const auto& c : r.record.at("captures")) {
        EXPECT_EQ(c.at("status"), "captured") << c.dump(1);
        ASSERT_TRUE(c.at("summary").is_object()) << c.dump(1);
        const auto& kernels = c.at("summary").at("kernels");
        ASSERT_EQ(kernels.size(), 1u) << "only the candidate's one kernel is in the profiler range: " << c.dump(1);
        EXPECT_TRUE(fs::exists(out.path() / c.at("raw_csv").get<std::string>()));
    }
    // A 256 MiB copy is DRAM-bound; the note names the bound with its numbers.
    EXPECT_EQ(r.record.at("bound"), "memory-bound") << r.record.dump(1);
    EXPECT_TRUE(std::regex_search(r.record.at("note").get<std::string>(), std::regex("[0-9]"))) << r.record.at("note");
    EXPECT_TRUE(fs::exists(out.path() / "profile_summary.json"));
    EXPECT_TRUE(fs::exists(out.path() / "profile_summary.md"));
}

// The planted suspect of the profile's rules (bytes_collapsed, below_floor; unit-tested on recorded
// H200 captures in tests/unit/eval/profile_step_test.cpp) no longer reaches the profile: a copy
// that runs near the DRAM peak and claims 10x the bytes it moves is "faster than the hardware
// allows" in its own bench, so the gate's physics floor refuses it and no loop starts from it.
TEST(GpuProfileTest, OverDeclaredBytesAreRefusedBeforeALoopStartsFromThem) {
    kloop::platform::scoped_temp_dir tmp("kloop-gpu-suspect");
    const fs::path op = tmp.path() / "op";
    fs::create_directories(op);
    fs::copy_file(copy_dir() + "/reference.cu", op / "reference.cu");
    fs::copy_file(copy_dir() + "/versions/copy_v1.cu", op / "copy_v1.cu");
    auto text = kloop::platform::read_file(copy_dir() + "/op.toml");
    const auto at = text.find("bytes = \"8*N\"");
    ASSERT_NE(at, std::string::npos);
    text.replace(at, std::string("bytes = \"8*N\"").size(), "bytes = \"80*N\"");
    kloop::platform::write_file_atomic(op / "op.toml", text);
    const fs::path ws = tmp.path() / "ws";
    const auto r = run_kloop({"init", op.string(), "--candidate", (op / "copy_v1.cu").string(), "--max-iterations", "2",
                              "--workspace", ws.string(), "--min-samples", "10", "--min-time", "0.02", "--max-time",
                              "0.3"},
                             900);
    EXPECT_EQ(r.exit_code, 3) << r.err << r.out;
    EXPECT_NE(r.out.find("fail physics_floor"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("faster than the hardware allows"), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(ws / "contract.json"));
}
