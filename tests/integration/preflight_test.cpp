// Integration test: `kloop preflight` end to end (the real binary). On a machine without a GPU
// it must exit 0, say so in the JSON (gpu.present = false), list the tools it looked for, and
// write preflight_check.json / .md into --workspace.
#include <gtest/gtest.h>

#include <filesystem>

#include "kloop_process.hpp"
#include "platform/file_io.hpp"

namespace kt = kloop::testing;
namespace fs = std::filesystem;

TEST(PreflightIntegration, JsonReportsGpuPresenceAndTools) {
    const auto r = kt::run_kloop({"preflight", "--json", "--no-python"}, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    const auto& j = r.record;
    EXPECT_EQ(j.at("kind"), "kloop.preflight");
    ASSERT_TRUE(j.at("gpu").contains("present"));
    for (const auto* tool : {"nvcc", "ncu", "compute-sanitizer", "nvidia-smi", "python3"}) {
        ASSERT_TRUE(j.at("tools").contains(tool)) << tool;
        const auto& t = j.at("tools").at(tool);
        if (t.at("found").get<bool>()) EXPECT_TRUE(t.at("path").is_string()) << tool;
        else EXPECT_FALSE(t.at("error").get<std::string>().empty()) << tool;
    }
    if (!j.at("gpu").at("present").get<bool>()) {
        EXPECT_NE(j.at("gpu").at("reason").get<std::string>().find("no GPU"), std::string::npos);
        EXPECT_FALSE(j.at("profiling").at("available").get<bool>());
        EXPECT_TRUE(j.at("gpus").empty());
    }
    if (!j.at("tools").at("ncu").at("found").get<bool>()) {
        EXPECT_NE(j.at("profiling").at("reason").get<std::string>().find("ncu not found"), std::string::npos);
    }
}

TEST(PreflightIntegration, WritesBothFilesIntoTheWorkspace) {
    kloop::platform::scoped_temp_dir dir("kloop-preflight");
    const auto ws = dir.path() / "ws";
    const auto r = kt::run_kloop({"preflight", "--no-python", "--workspace", ws.string()}, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("# kloop preflight"), std::string::npos);
    ASSERT_TRUE(fs::exists(ws / "preflight_check.json"));
    ASSERT_TRUE(fs::exists(ws / "preflight_check.md"));
    const auto j = nlohmann::json::parse(kloop::platform::read_file(ws / "preflight_check.json"));
    EXPECT_EQ(j.at("schema_version"), 1);
    EXPECT_TRUE(j.at("command_line").is_array());
}
