// Unit under test: `kloop preflight` on a GPU machine — the GPU facts come from the probe child
// (`kloop-runner-cuda --probe-gpus`: NVML and the driver API) and reach the report. Part of
// kloop.test.gpu (label `gpu`; exits 77 without a GPU, gpu_copy_test.cpp).
#include <gtest/gtest.h>

#include <string>

#include "integration/kloop_process.hpp"

using kloop::testing::run_kloop;

TEST(GpuPreflightTest, TheProbeChildReportsTheDeviceWithSmsL2AndClocks) {
    const auto r = run_kloop({"preflight", "--json", "--no-python"}, 300);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    ASSERT_TRUE(r.record.at("gpu").at("present").get<bool>()) << r.record.dump(1);
    const auto& g = r.record.at("gpus").at(0);
    // NVML and the driver API both answered, merged by UUID.
    EXPECT_EQ(g.at("source"), "nvml+driver") << g.dump(1);
    EXPECT_EQ(g.at("uuid").get<std::string>().rfind("GPU-", 0), 0u) << g.dump(1);
    EXPECT_GT(g.at("sm_count").get<int>(), 0);
    EXPECT_GT(g.at("l2_bytes").get<std::uint64_t>(), std::uint64_t{1} << 20);
    EXPECT_GT(g.at("clocks_mhz").at("sm_max").get<unsigned>(), 0u);
    EXPECT_FALSE(g.at("compute_capability").is_null());
    EXPECT_FALSE(g.at("idle_samples").empty());
    EXPECT_FALSE(r.record.at("driver_version").get<std::string>().empty());
    EXPECT_FALSE(r.record.at("cuda_driver_api").get<std::string>().empty());
}
