// Unit under test: profile/kernel_profile — ncu metrics → named facts: the recorded H200 capture,
// DRAM bytes measured vs derived, missing metrics, stall shares, launch dimensions.
#include <gtest/gtest.h>

#include "profile/kernel_profile.hpp"
#include "profile/ncu_csv.hpp"
#include "profile_test_util.hpp"

using namespace kloop::profile;
using namespace kloop::profile::testing;

namespace {

kernel_profile v0_profile() {
    const auto t = parse_ncu_raw_csv(read_text(data_path(v0_raw_name)), v0_raw_name);
    const auto ks = profiles_from_table(t);
    if (ks.size() != 1) throw std::runtime_error("expected one kernel in the v0 capture");
    return ks.front();
}

kernel_profile one(const std::vector<std::pair<std::string, std::string>>& metrics, const synth_kernel& k) {
    const auto ks = profiles_from_table(parse_ncu_raw_csv(make_raw_csv(metrics, {k}), "synthetic.csv"));
    if (ks.size() != 1) throw std::runtime_error("expected one kernel");
    return ks.front();
}

}  // namespace

TEST(KernelProfileTest, RecordedH200CaptureFacts) {
    const kernel_profile k = v0_profile();
    EXPECT_EQ(k.id, "0");
    EXPECT_EQ(k.name,
              "<unnamed>::fwd_kernel(const __nv_bfloat16 *, const __nv_bfloat16 *, __nv_bfloat16 *, float *, int, int, float)");
    EXPECT_EQ(k.device_name, "NVIDIA H200");
    EXPECT_EQ(k.cc, "9.0");
    EXPECT_EQ(k.grid_blocks, 128.0);
    EXPECT_EQ(k.block_threads, 128.0);
    EXPECT_DOUBLE_EQ(*k.duration_ns, 2640960.0);  // "2.640960" ms
    EXPECT_DOUBLE_EQ(*k.sm_throughput_pct, 3.734529);
    EXPECT_DOUBLE_EQ(*k.memory_throughput_pct, 67.273797);
    EXPECT_DOUBLE_EQ(*k.dram_throughput_pct, 6.609091);
    EXPECT_DOUBLE_EQ(*k.dram_bytes_per_second, 318.02593e9);  // "318.025930" Gbyte/s
    // No dram__bytes_read/_write in this targeted set: total derived from the rate.
    EXPECT_FALSE(k.dram_bytes_read.has_value());
    EXPECT_FALSE(k.dram_bytes_write.has_value());
    ASSERT_TRUE(k.dram_bytes.has_value());
    EXPECT_TRUE(k.dram_bytes_derived);
    EXPECT_NEAR(*k.dram_bytes, 318.02593e9 * 2.64096e-3, 1.0);
    EXPECT_DOUBLE_EQ(*k.achieved_occupancy_pct, 6.225036);
    EXPECT_DOUBLE_EQ(*k.theoretical_occupancy_pct, 100.0);
    EXPECT_EQ(k.registers_per_thread, 29.0);
    EXPECT_DOUBLE_EQ(*k.shared_mem_per_block_bytes, 1024.0);  // "1.024000" Kbyte/block
    EXPECT_EQ(k.shared_mem_per_block_static_bytes, 0.0);
    EXPECT_EQ(k.shared_mem_per_block_dynamic_bytes, 0.0);
    EXPECT_EQ(k.local_spilling_requests, 0.0);
    EXPECT_EQ(k.spilling_instructions, 0.0);
    EXPECT_DOUBLE_EQ(*k.waves_per_sm, 0.06);
    EXPECT_EQ(k.sm_count, 132.0);
    EXPECT_DOUBLE_EQ(*k.l1_hit_rate_pct, 95.343557);
    EXPECT_DOUBLE_EQ(*k.l2_hit_rate_pct, 92.264409);
    EXPECT_DOUBLE_EQ(*k.tensor_pipe_pct, 0.000037);
    // sm__cycles_elapsed is not in the targeted set: the GPC clock stands in (same clock domain).
    EXPECT_DOUBLE_EQ(*k.sm_clock_hz, 1.97909e9);
    EXPECT_EQ(k.occupancy_limit_blocks.registers, 16.0);
    EXPECT_EQ(k.occupancy_limit_blocks.shared_mem, 32.0);
    EXPECT_EQ(k.occupancy_limit_blocks.warps, 16.0);
    EXPECT_EQ(k.occupancy_limit_blocks.blocks, 32.0);
    EXPECT_EQ(k.occupancy_limit_blocks.barriers, 32.0);
    EXPECT_EQ(k.occupancy_limit_blocks.get_limiter(), "registers");  // tie with warps: first in order
    EXPECT_EQ(k.metric_columns, 599u);
    EXPECT_EQ(k.metrics_with_value, 590u);
}

TEST(KernelProfileTest, RecordedCaptureStallReasonsSortedWithShares) {
    const kernel_profile k = v0_profile();
    ASSERT_EQ(k.stalls.size(), 19u);
    EXPECT_EQ(k.stalls[0].reason, "long_scoreboard");
    EXPECT_DOUBLE_EQ(k.stalls[0].per_issue, 44.742451);
    // ncu's CPIStall rule: "about 93.3% of the total average of 48.0 cycles".
    EXPECT_NEAR(k.stalls[0].share, 0.9323, 1e-4);
    EXPECT_EQ(k.stalls[1].reason, "wait");
    EXPECT_EQ(k.stalls[2].reason, "selected");
    double share_sum = 0;
    for (std::size_t i = 0; i < k.stalls.size(); ++i) {
        share_sum += k.stalls[i].share;
        if (i > 0) {
            EXPECT_GE(k.stalls[i - 1].per_issue, k.stalls[i].per_issue);
        }
    }
    EXPECT_NEAR(share_sum, 1.0, 1e-12);
    const auto top = k.top_stalls(3);  // "selected" is not a stall
    ASSERT_EQ(top.size(), 3u);
    EXPECT_EQ(top[0].reason, "long_scoreboard");
    EXPECT_EQ(top[1].reason, "wait");
    EXPECT_EQ(top[2].reason, "branch_resolving");
}

TEST(KernelProfileTest, MeasuredDramBytesAreNotDerived) {
    const auto k = one({{"gpu__time_duration.sum", "nsecond"},
                        {"dram__bytes_read.sum", "byte"},
                        {"dram__bytes_write.sum", "Mbyte"},
                        {"dram__bytes.sum.per_second", "Tbyte/s"}},
                       {"gemm", {{"gpu__time_duration.sum", "1,421,984"},
                                 {"dram__bytes_read.sum", "1,145,203,200"},
                                 {"dram__bytes_write.sum", "130.639872"},
                                 {"dram__bytes.sum.per_second", "0.897"}}});
    EXPECT_EQ(k.duration_ns, 1421984.0);
    EXPECT_EQ(k.dram_bytes_read, 1145203200.0);
    EXPECT_DOUBLE_EQ(*k.dram_bytes_write, 130639872.0);
    EXPECT_DOUBLE_EQ(*k.dram_bytes, 1145203200.0 + 130639872.0);
    EXPECT_FALSE(k.dram_bytes_derived);
    EXPECT_DOUBLE_EQ(*k.dram_bytes_per_second, 0.897e12);

    // dram__bytes.sum alone is a measurement too.
    const auto s = one({{"dram__bytes.sum", "Gbyte"}}, {"k", {{"dram__bytes.sum", "1.5"}}});
    EXPECT_DOUBLE_EQ(*s.dram_bytes, 1.5e9);
    EXPECT_FALSE(s.dram_bytes_derived);
}

TEST(KernelProfileTest, MissingMetricsStayEmpty) {
    const auto k = one({{"gpu__time_duration.sum", "usecond"}, {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "%"}},
                       {"tiny", {{"gpu__time_duration.sum", "4.2"}, {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "no data"}}});
    EXPECT_DOUBLE_EQ(*k.duration_ns, 4200.0);
    EXPECT_FALSE(k.sm_throughput_pct.has_value());
    EXPECT_FALSE(k.memory_throughput_pct.has_value());
    EXPECT_FALSE(k.dram_bytes.has_value());  // no rate either: nothing to derive from
    EXPECT_FALSE(k.dram_bytes_derived);
    EXPECT_FALSE(k.achieved_occupancy_pct.has_value());
    EXPECT_FALSE(k.sm_clock_hz.has_value());
    EXPECT_TRUE(k.stalls.empty());
    EXPECT_TRUE(k.top_stalls().empty());
    EXPECT_EQ(k.occupancy_limit_blocks.get_limiter(), "");
    EXPECT_EQ(k.device_name, "");
    EXPECT_EQ(k.metric_columns, 2u);
    EXPECT_EQ(k.metrics_with_value, 1u);
    // Launch dimensions from the ID columns when launch__* are absent.
    EXPECT_EQ(k.grid_blocks, 1024.0);
    EXPECT_EQ(k.block_threads, 256.0);
}

TEST(KernelProfileTest, DimsProduct) {
    EXPECT_EQ(dims_product("(128, 1, 1)"), 128.0);
    EXPECT_EQ(dims_product("(64, 2, 3)"), 384.0);
    EXPECT_EQ(dims_product(" (7) "), 7.0);
    EXPECT_FALSE(dims_product("").has_value());
    EXPECT_FALSE(dims_product("128").has_value());
    EXPECT_FALSE(dims_product("(1, x, 1)").has_value());
    EXPECT_FALSE(dims_product("(1, 1").has_value());
}

TEST(KernelProfileTest, JsonHasStableKeysAndNulls) {
    const auto k = one({{"gpu__time_duration.sum", "ms"}}, {"k", {{"gpu__time_duration.sum", "1"}}});
    const auto j = to_json(k);
    EXPECT_EQ(j.at("duration_ns"), 1e6);
    EXPECT_TRUE(j.at("sm_throughput_pct").is_null());
    EXPECT_TRUE(j.at("dram_bytes").is_null());
    EXPECT_EQ(j.at("dram_bytes_derived"), false);
    EXPECT_TRUE(j.at("occupancy_limit_blocks").at("limiter").is_null());
    EXPECT_TRUE(j.at("stalls").is_array());
    const auto v0 = to_json(v0_profile());
    EXPECT_EQ(v0.at("stalls").at(0).at("reason"), "long_scoreboard");
    EXPECT_EQ(v0.at("occupancy_limit_blocks").at("limiter"), "registers");
    EXPECT_EQ(v0.at("device"), "NVIDIA H200");
}
