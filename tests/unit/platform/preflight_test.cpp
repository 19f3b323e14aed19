// Unit under test: platform/preflight and platform/gpu_facts — the parsers of nvidia-smi and tool
// version output, the GPU probe's JSON both ways, run_preflight with a fake command runner that
// answers the tool probes and the GPU probe (a child: NVML and the driver never load in kloop),
// and the report's JSON and Markdown (report/preflight_report), so every path runs on any machine.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "platform/gpu_facts.hpp"
#include "platform/preflight.hpp"
#include "platform/subprocess.hpp"
#include "report/preflight_report.hpp"

namespace kp = kloop::platform;

namespace {

// Answers every command with a canned --version text; records what was run.
class fake_runner final : public kp::command_runner_base {
public:
    std::vector<std::vector<std::string>> calls;
    std::string probe_output;  // what "--probe-gpus" prints

protected:
    kp::process_result do_run(const kp::process_request& r) override {
        calls.push_back(r.argv);
        kp::process_result res;
        res.started = true;
        res.exit_code = 0;
        const auto& exe = r.argv.front();
        if (r.argv.size() > 1 && r.argv[1] == "--probe-gpus")
            res.stdout_text = probe_output;
        else if (exe.find("nvcc") != std::string::npos)
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
    EXPECT_EQ(kp::describe_clock_event_reasons(0), "none");
    EXPECT_EQ(kp::describe_clock_event_reasons(0x1), "gpu_idle");
    EXPECT_EQ(kp::describe_clock_event_reasons(0x4 | 0x40), "sw_power_cap|hw_thermal_slowdown");
    EXPECT_EQ(kp::describe_clock_event_reasons(0x1000), "0x1000");
}

TEST(PreflightTest, WithoutDeviceQueriesReportsNoGpuAndStillListsTools) {
    fake_runner runner;
    kp::preflight_options o;
    o.query_nvidia_smi = false;
    o.query_python = false;
    const auto r = kp::run_preflight(runner, o);
    EXPECT_FALSE(r.gpu_present);
    EXPECT_NE(r.gpu_absent_reason.find("no GPU found"), std::string::npos);
    EXPECT_FALSE(r.profiling_available);
    EXPECT_NE(r.profiling_reason.find("profiling unavailable"), std::string::npos);
    const auto j = kloop::report::to_json(r);
    EXPECT_EQ(j.at("schema_version"), kp::preflight_schema_version);
    EXPECT_EQ(j.at("gpu").at("present"), false);
    for (const auto* tool : {"nvcc", "ncu", "compute-sanitizer", "nvidia-smi", "python3"}) EXPECT_TRUE(j.at("tools").contains(tool)) << tool;
    // A tool that was found got its version from the fake.
    if (j.at("tools").at("nvcc").at("found").get<bool>()) {
        EXPECT_EQ(j.at("tools").at("nvcc").at("version"), "13.0.88");
    }
    const auto md = kloop::report::to_markdown(r);
    EXPECT_NE(md.find("# kloop preflight"), std::string::npos);
    EXPECT_NE(md.find("## Tools"), std::string::npos);
    EXPECT_NE(md.find("no GPU found"), std::string::npos);
    // Built without CUDA support (the default here): said so.
    EXPECT_NE(md.find("without CUDA support"), std::string::npos);
}

namespace {

kp::gpu_info h200() {
    kp::gpu_info g;
    g.index = 0;
    g.source = "nvml+driver";
    g.name = "NVIDIA H200";
    g.uuid = "GPU-41063509-aaaa-bbbb-cccc-0123456789ab";
    g.cc_major = 9;
    g.cc_minor = 0;
    g.sm_count = 132;
    g.l2_bytes = 52428800;
    g.memory_bytes = 150754820096ull;
    g.sm_clock_mhz = 345;
    g.max_sm_clock_mhz = 1980;
    g.event_reasons = 0x1;
    g.temperature_c = 31;
    g.power_w = 76.5;
    g.utilization_pct = 0;
    g.compute_processes = 2;
    g.idle_samples = {{0.0, 345, 0x1, 0}, {0.1, 345, 0x1, 0}};
    return g;
}

}  // namespace

TEST(PreflightTest, TheGpuProbesJsonRoundTripsAndRefusesAnythingElse) {
    kp::gpu_probe_result r;
    r.driver_version = "580.159.04";
    r.cuda_driver_api = "13.0";
    r.gpus = {h200()};
    const auto back = kp::gpu_probe_from_json(kp::to_json(r).dump());
    EXPECT_EQ(back.driver_version, "580.159.04");
    EXPECT_EQ(back.cuda_driver_api, "13.0");
    ASSERT_EQ(back.gpus.size(), 1u);
    EXPECT_EQ(kp::to_json(back.gpus[0]), kp::to_json(r.gpus[0]));
    EXPECT_EQ(back.gpus[0].cc_major, 9);
    EXPECT_EQ(back.gpus[0].sm_count, 132);
    EXPECT_EQ(back.gpus[0].compute_processes.value_or(-1), 2);
    ASSERT_EQ(back.gpus[0].idle_samples.size(), 2u);
    EXPECT_EQ(back.gpus[0].idle_samples[1].event_reasons.value_or(0), 1u);

    EXPECT_THROW((void)kp::gpu_probe_from_json("not json"), std::invalid_argument);
    EXPECT_THROW((void)kp::gpu_probe_from_json(R"({"kind":"kloop.preflight","schema_version":1,"gpus":[]})"),
                 std::invalid_argument);
    EXPECT_THROW((void)kp::gpu_probe_from_json(R"({"kind":"kloop.gpu_probe","schema_version":1,"gpus":{}})"),
                 std::invalid_argument);
    EXPECT_THROW((void)kp::gpu_probe_from_json(
                     R"({"kind":"kloop.gpu_probe","schema_version":1,"gpus":[{"compute_capability":"9"}]})"),
                 std::invalid_argument);
    EXPECT_THROW((void)kp::gpu_probe_from_json(R"({"kind":7,"schema_version":1,"gpus":[]})"), std::invalid_argument);
}

TEST(PreflightTest, GpusComeFromTheProbeChildAndItsFactsDriveTheWarnings) {
    fake_runner runner;
    kp::gpu_probe_result probe;
    probe.driver_version = "580.159.04";
    probe.cuda_driver_api = "13.0";
    probe.gpus = {h200()};
    runner.probe_output = kp::to_json(probe).dump();
    kp::preflight_options o;
    o.gpu_probe_argv = {"/opt/kloop/bin/kloop-runner-cuda", "--probe-gpus"};
    o.idle_samples = 3;
    o.query_nvidia_smi = false;
    o.query_python = false;
    const auto r = kp::run_preflight(runner, o);
    // The probe ran as a child, with the idle sampling passed on.
    const auto probe_call = std::find_if(runner.calls.begin(), runner.calls.end(),
                                         [](const auto& argv) { return argv.size() > 1 && argv[1] == "--probe-gpus"; });
    ASSERT_NE(probe_call, runner.calls.end());
    const std::vector<std::string> want = {"/opt/kloop/bin/kloop-runner-cuda", "--probe-gpus", "--idle-samples", "3",
                                           "--idle-interval", "0.1"};
    EXPECT_EQ(*probe_call, want);
    ASSERT_TRUE(r.gpu_present);
    ASSERT_EQ(r.gpus.size(), 1u);
    EXPECT_EQ(r.driver_version, "580.159.04");
    EXPECT_EQ(r.gpus[0].sm_count, 132);
    EXPECT_EQ(r.gpus[0].event_reasons_text, "gpu_idle");
    EXPECT_NE(r.gpus[0].idle_evidence.find("BUSY"), std::string::npos) << r.gpus[0].idle_evidence;  // 2 processes
    bool warned = false;
    for (const auto& w : r.warnings) warned = warned || w.find("2 other compute processes") != std::string::npos;
    EXPECT_TRUE(warned);
    const auto md = kloop::report::to_markdown(r);
    EXPECT_NE(md.find("### GPU 0: NVIDIA H200"), std::string::npos);
    EXPECT_NE(md.find("| SMs | 132 |"), std::string::npos);
}

TEST(PreflightTest, AProbeThatFailsOrLiesIsAReasonNotAGpu) {
    kp::preflight_options o;
    o.gpu_probe_argv = {"kloop-runner-cuda", "--probe-gpus"};
    o.query_nvidia_smi = false;
    o.query_python = false;
    fake_runner garbled;
    garbled.probe_output = "{\"gpus\": [}";
    const auto r = kp::run_preflight(garbled, o);
    EXPECT_FALSE(r.gpu_present);
    EXPECT_NE(r.gpu_absent_reason.find("not a JSON object"), std::string::npos) << r.gpu_absent_reason;

    fake_runner none;
    kp::gpu_probe_result empty;
    empty.nvml_error = "dlopen libnvidia-ml.so.1: cannot open shared object file";
    empty.driver_error = "libcuda.so.1: cannot open shared object file";
    none.probe_output = kp::to_json(empty).dump();
    const auto n = kp::run_preflight(none, o);
    EXPECT_FALSE(n.gpu_present);
    EXPECT_NE(n.gpu_absent_reason.find("libnvidia-ml.so.1"), std::string::npos) << n.gpu_absent_reason;
    EXPECT_NE(n.gpu_absent_reason.find("libcuda.so.1"), std::string::npos) << n.gpu_absent_reason;
}
