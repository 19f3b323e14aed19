// Unit under test: platform/preflight — the parsers of nvidia-smi and tool version output, the
// report's JSON and Markdown, and run_preflight with every device query switched off (a fake
// command runner answers the tool probes), so the no-GPU path is tested on any machine.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "platform/preflight.hpp"
#include "platform/subprocess.hpp"

namespace kp = kloop::platform;

namespace {

// Answers every command with a canned --version text; records what was run.
class fake_runner final : public kp::command_runner_base {
public:
    std::vector<std::vector<std::string>> calls;

protected:
    kp::process_result do_run(const kp::process_request& r) override {
        calls.push_back(r.argv);
        kp::process_result res;
        res.started = true;
        res.exit_code = 0;
        const auto& exe = r.argv.front();
        if (exe.find("nvcc") != std::string::npos)
            res.stdout_text = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\nBuild cuda_13.0.r13.0\n";
        else if (exe.find("ncu") != std::string::npos)
            res.stdout_text = "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\nVersion 2025.3.1.0 (build 36398880) (public-release)\n";
        else
            res.stdout_text = "Python 3.12.3\n";
        return res;
    }
};

}  // namespace

TEST(PreflightTest, ParsesNvidiaSmiCsv) {
    const auto gpus = kp::parse_nvidia_smi_csv(
        "0, NVIDIA H200, GPU-41063509-aaaa-bbbb-cccc-0123456789ab, 580.159.04, 9.0, 143771, 345, 1980, 3201, 3201, "
        "0x0000000000000001, 36, 80.25, 700.00, 0\n");
    ASSERT_EQ(gpus.size(), 1u);
    const auto& g = gpus[0];
    EXPECT_EQ(g.name, "NVIDIA H200");
    EXPECT_EQ(g.uuid, "GPU-41063509-aaaa-bbbb-cccc-0123456789ab");
    EXPECT_EQ(g.cc_major, 9);
    EXPECT_EQ(g.cc_minor, 0);
    EXPECT_EQ(g.memory_bytes, 143771ull << 20);
    EXPECT_EQ(g.sm_clock_mhz, 345u);
    EXPECT_EQ(g.max_sm_clock_mhz, 1980u);
    ASSERT_TRUE(g.event_reasons.has_value());
    EXPECT_EQ(*g.event_reasons, 1u);
    EXPECT_EQ(g.temperature_c.value_or(0), 36u);
    EXPECT_DOUBLE_EQ(g.power_w.value_or(0), 80.25);
    EXPECT_EQ(g.utilization_pct.value_or(99), 0u);
    // "[N/A]" fields stay unset; short lines are ignored.
    const auto na = kp::parse_nvidia_smi_csv("1, X, GPU-1, 1, [N/A], [N/A], 0, 0, 0, 0, [N/A], [N/A], [N/A], [N/A], [N/A]\nbad\n");
    ASSERT_EQ(na.size(), 1u);
    EXPECT_FALSE(na[0].event_reasons.has_value());
    EXPECT_EQ(na[0].cc_major, -1);
}

TEST(PreflightTest, ParsesToolVersions) {
    EXPECT_EQ(kp::parse_tool_version("Cuda compilation tools, release 13.0, V13.0.88\n"), "13.0.88");
    EXPECT_EQ(kp::parse_tool_version("Version 2025.3.1.0 (build 36398880) (public-release)"), "2025.3.1.0");
    EXPECT_EQ(kp::parse_tool_version("NVIDIA (R) Compute Sanitizer\nCopyright\nVersion 2025.3.0.0 (build 1)"), "2025.3.0.0");
    EXPECT_EQ(kp::parse_tool_version("Python 3.12.3\n"), "Python 3.12.3");
    EXPECT_EQ(kp::parse_tool_version(""), "");
}

TEST(PreflightTest, DescribesClockEventReasons) {
    EXPECT_EQ(kp::describe_event_reasons(0), "none");
    EXPECT_EQ(kp::describe_event_reasons(0x1), "gpu_idle");
    EXPECT_EQ(kp::describe_event_reasons(0x4 | 0x40), "sw_power_cap|hw_thermal_slowdown");
    EXPECT_EQ(kp::describe_event_reasons(0x1000), "0x1000");
}

TEST(PreflightTest, WithoutDeviceQueriesReportsNoGpuAndStillListsTools) {
    fake_runner runner;
    kp::preflight_options o;
    o.query_nvml = false;
    o.query_driver = false;
    o.query_nvidia_smi = false;
    o.query_python = false;
    const auto r = kp::run_preflight(runner, o);
    EXPECT_FALSE(r.gpu_present);
    EXPECT_NE(r.gpu_absent_reason.find("no GPU found"), std::string::npos);
    EXPECT_FALSE(r.profiling_available);
    EXPECT_NE(r.profiling_reason.find("profiling unavailable"), std::string::npos);
    const auto j = kp::to_json(r);
    EXPECT_EQ(j.at("schema_version"), kp::preflight_schema_version);
    EXPECT_EQ(j.at("gpu").at("present"), false);
    for (const auto* tool : {"nvcc", "ncu", "compute-sanitizer", "nvidia-smi", "python3"}) EXPECT_TRUE(j.at("tools").contains(tool)) << tool;
    // A tool that was found got its version from the fake.
    if (j.at("tools").at("nvcc").at("found").get<bool>()) {
        EXPECT_EQ(j.at("tools").at("nvcc").at("version"), "13.0.88");
    }
    const auto md = kp::to_markdown(r);
    EXPECT_NE(md.find("# kloop preflight"), std::string::npos);
    EXPECT_NE(md.find("## Tools"), std::string::npos);
    EXPECT_NE(md.find("no GPU found"), std::string::npos);
    // Built without CUDA support (the default here): said so.
    EXPECT_NE(md.find("without CUDA support"), std::string::npos);
}
