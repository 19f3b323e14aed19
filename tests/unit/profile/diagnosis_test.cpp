// Unit under test: profile/diagnosis — the bound of a kernel from its facts: the recorded naive
// H200 kernel (L1/L2, not DRAM), synthetic memory-, compute-, launch-, occupancy- and
// latency-bound kernels (through CSV text in base units), the thresholds' edges, and the
// knowledge-base anchors the directions cite.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "profile/diagnosis.hpp"
#include "profile/kernel_profile.hpp"
#include "profile/ncu_csv.hpp"
#include "profile_test_util.hpp"

using namespace kloop::profile;
using namespace kloop::profile::testing;

namespace {

// The metrics a targeted capture has, in the units `ncu --print-units base` writes.
const std::vector<std::pair<std::string, std::string>> base_metrics{
    {"gpu__time_duration.sum", "nsecond"},
    {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "%"},
    {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%"},
    {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "%"},
    {"dram__bytes.sum.per_second", "byte/second"},
    {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "%"},
    {"sm__warps_active.avg.pct_of_peak_sustained_active", "%"},
    {"sm__maximum_warps_per_active_cycle_pct", "%"},
    {"launch__waves_per_multiprocessor", ""},
    {"launch__grid_size", ""},
    {"launch__block_size", ""},
    {"launch__registers_per_thread", "register/thread"},
    {"launch__occupancy_limit_registers", "block"},
    {"launch__occupancy_limit_shared_mem", "block"},
    {"launch__occupancy_limit_warps", "block"},
    {"launch__occupancy_limit_blocks", "block"},
    {"launch__shared_mem_per_block", "byte/block"},
    {"l1tex__t_sector_hit_rate.pct", "%"},
    {"lts__t_sector_hit_rate.pct", "%"},
    {"sass__inst_executed_register_spilling", "inst"},
    {"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "inst"},
    {"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "inst"},
    {"smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio", "inst"},
    {"smsp__average_warps_issue_stalled_selected_per_issue_active.ratio", "inst"},
    {"device__attribute_display_name", ""},
};

kernel_profile from_csv(const std::map<std::string, std::string>& values, const std::string& name = "k") {
    synth_kernel k;
    k.name = name;
    k.values = values;
    k.values.emplace("device__attribute_display_name", "NVIDIA H200");
    const auto ks = profiles_from_table(parse_ncu_raw_csv(make_raw_csv(base_metrics, {k}), "synthetic.csv"));
    if (ks.size() != 1) throw std::runtime_error("expected one kernel");
    return ks.front();
}

// A healthy, long, busy-ish kernel; tests override what they are about.
std::map<std::string, std::string> base_values() {
    return {{"gpu__time_duration.sum", "250,000"},
            {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "30"},
            {"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "35"},
            {"gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "30"},
            {"dram__bytes.sum.per_second", "1,440,000,000,000"},
            {"sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "0"},
            {"sm__warps_active.avg.pct_of_peak_sustained_active", "60"},
            {"sm__maximum_warps_per_active_cycle_pct", "75"},
            {"launch__waves_per_multiprocessor", "8.5"},
            {"launch__grid_size", "8,448"},
            {"launch__block_size", "256"},
            {"launch__registers_per_thread", "40"},
            {"launch__occupancy_limit_registers", "6"},
            {"launch__occupancy_limit_shared_mem", "8"},
            {"launch__occupancy_limit_warps", "8"},
            {"launch__occupancy_limit_blocks", "32"},
            {"launch__shared_mem_per_block", "1,024"},
            {"l1tex__t_sector_hit_rate.pct", "10"},
            {"lts__t_sector_hit_rate.pct", "40"},
            {"sass__inst_executed_register_spilling", "0"},
            {"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio", "6"},
            {"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio", "1"},
            {"smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio", "0"},
            {"smsp__average_warps_issue_stalled_selected_per_issue_active.ratio", "1"}};
}

std::vector<std::string> anchors_of(const diagnosis& d) {
    std::vector<std::string> out;
    for (const auto& x : d.directions) out.push_back(x.kb_anchor);
    return out;
}

bool cites(const diagnosis& d, const std::string& anchor) {
    const auto a = anchors_of(d);
    return std::find(a.begin(), a.end(), anchor) != a.end();
}

const evidence_item* evidence(const diagnosis& d, const std::string& signal) {
    for (const auto& e : d.evidence)
        if (e.signal == signal) return &e;
    return nullptr;
}

// Every classified kernel gets 2–4 directions, each citing a known anchor and a signal.
void expect_well_formed(const diagnosis& d) {
    if (d.kind == bound::unknown) return;
    EXPECT_GE(d.directions.size(), 2u) << d.headline;
    EXPECT_LE(d.directions.size(), 4u) << d.headline;
    const auto& known = knowledge_base_anchors();
    std::set<std::string> seen;
    for (const auto& x : d.directions) {
        EXPECT_NE(std::find(known.begin(), known.end(), x.kb_anchor), known.end()) << x.kb_anchor;
        EXPECT_FALSE(x.signal.empty()) << x.kb_anchor;
        EXPECT_FALSE(x.technique.empty()) << x.kb_anchor;
        EXPECT_TRUE(seen.insert(x.kb_anchor).second) << "cited twice: " << x.kb_anchor;
    }
    EXPECT_EQ(d.headline.rfind(to_string(d.kind), 0), 0u) << d.headline;  // the headline starts with the bound
}

kernel_profile v0() {
    const auto ks = profiles_from_table(parse_ncu_raw_csv(read_text(data_path(v0_raw_name)), v0_raw_name));
    return ks.at(0);
}

}  // namespace

// The recorded naive rmsnorm forward (one thread per row, 128 blocks of 128 threads on 132 SMs).
// Memory SOL 67.3 % >= 60 and >= SM 3.7 %, so it is memory-bound by our rule (ncu's SOLBottleneck
// rule agrees: "identify the L2 bottleneck ... check memory replay (coalescing)"). But DRAM is
// 6.6 %, far under 0.8 × 67.3 = 53.8 %: the busy level is L1/L2 (each warp load touches 32 rows'
// lines), not DRAM. It must not read as DRAM-bound. The grid fills 0.06 waves and achieves 6 %
// occupancy; those appear as evidence and as a direction (fill the GPU), after coalescing.
TEST(DiagnosisTest, RecordedNaiveKernelIsL1L2BoundNotDram) {
    const diagnosis d = diagnose(v0());
    expect_well_formed(d);
    EXPECT_EQ(d.kind, bound::memory);
    ASSERT_TRUE(d.level.has_value());
    EXPECT_EQ(*d.level, memory_level::cache);
    EXPECT_NE(*d.level, memory_level::dram);
    EXPECT_EQ(d.headline.find("(DRAM)"), std::string::npos) << d.headline;
    EXPECT_NE(d.headline.find("memory-bound (L1/L2, not DRAM)"), std::string::npos) << d.headline;
    EXPECT_NE(d.headline.find("memory 67.3 %"), std::string::npos) << d.headline;
    EXPECT_NE(d.headline.find("DRAM only 6.6 %"), std::string::npos) << d.headline;
    EXPECT_NE(d.headline.find("318 GB/s"), std::string::npos) << d.headline;
    EXPECT_NE(d.headline.find("0.06 waves"), std::string::npos) << d.headline;
    EXPECT_NE(d.headline.find("long_scoreboard 93 %"), std::string::npos) << d.headline;
    EXPECT_EQ(d.directions.at(0).kb_anchor, "mem-coalescing");
    EXPECT_TRUE(cites(d, "mem-avoid-rereads"));  // L1 hit 95 %: lines fetched again and again
    EXPECT_TRUE(cites(d, "occ-waves-tail"));     // 0.06 waves
    EXPECT_FALSE(cites(d, "mem-fusion"));        // cutting DRAM bytes is not the lever here

    const auto* dram = evidence(d, "DRAM throughput");
    ASSERT_NE(dram, nullptr);
    EXPECT_FALSE(dram->met);
    EXPECT_NEAR(dram->value, 6.609091, 1e-9);
    const auto* mem = evidence(d, "memory throughput");
    ASSERT_NE(mem, nullptr);
    EXPECT_TRUE(mem->met);
    EXPECT_EQ(mem->metric, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
    const auto* waves = evidence(d, "waves per SM");
    ASSERT_NE(waves, nullptr);
    EXPECT_TRUE(waves->met);
    const auto* occ = evidence(d, "achieved occupancy");
    ASSERT_NE(occ, nullptr);
    EXPECT_TRUE(occ->met);  // 6.2 % < 0.5 × 100 %
    EXPECT_NE(evidence(d, "top stall: long_scoreboard"), nullptr);
}

TEST(DiagnosisTest, StreamingKernelIsDramBound) {
    auto v = base_values();
    v["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] = "90.2";
    v["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] = "88.1";
    v["dram__bytes.sum.per_second"] = "4,210,000,000,000";
    v["lts__t_sector_hit_rate.pct"] = "12";
    const diagnosis d = diagnose(from_csv(v));
    expect_well_formed(d);
    EXPECT_EQ(d.kind, bound::memory);
    EXPECT_EQ(d.level, memory_level::dram);
    EXPECT_EQ(d.headline, "memory-bound (DRAM): DRAM 88.1 % of peak, 4.21 TB/s; L2 hit 12 %");
    EXPECT_TRUE(cites(d, "mem-fusion"));
    EXPECT_FALSE(cites(d, "mem-vector-loads"));  // 88 % is at the roof already

    // Far from the roof, and reading its data twice.
    v["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] = "65";
    v["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] = "64";
    const diagnosis r = diagnose(from_csv(v), {2.0});
    expect_well_formed(r);
    EXPECT_EQ(r.level, memory_level::dram);
    EXPECT_EQ(r.directions.at(0).kb_anchor, "mem-avoid-rereads");
    EXPECT_TRUE(cites(r, "mem-l2-persistence"));  // L2 hit 12 % with a 2x re-read
    EXPECT_NE(r.headline.find("re-read 2.00x"), std::string::npos) << r.headline;
    const auto* re = evidence(r, "re-read factor");
    ASSERT_NE(re, nullptr);
    EXPECT_TRUE(re->met);
}

TEST(DiagnosisTest, DramLevelEdge) {
    auto v = base_values();
    v["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] = "70";
    v["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] = "56";  // exactly 0.8 × 70
    EXPECT_EQ(diagnose(from_csv(v)).level, memory_level::dram);
    v["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] = "55.9";
    EXPECT_EQ(diagnose(from_csv(v)).level, memory_level::cache);
}

TEST(DiagnosisTest, ComputeBoundWithoutTensorCores) {
    auto v = base_values();
    v["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = "85";
    v["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] = "40";
    v["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"] = "2";
    const diagnosis d = diagnose(from_csv(v));
    expect_well_formed(d);
    EXPECT_EQ(d.kind, bound::compute);
    EXPECT_FALSE(d.level.has_value());
    EXPECT_EQ(d.directions.at(0).kb_anchor, "compute-tensor-cores");
    EXPECT_NE(d.headline.find("SM 85.0 %"), std::string::npos) << d.headline;
}

TEST(DiagnosisTest, BalancedGemmWithBusyTensorPipeIsComputeBound) {
    // The cuBLAS bf16 8192³ GEMM of gpu-tools.md §1.3: SM 93.35, memory 94.52, DRAM 18.65, tensor 93.35.
    auto v = base_values();
    v["gpu__time_duration.sum"] = "1,421,984";
    v["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = "93.35";
    v["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] = "94.52";
    v["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] = "18.65";
    v["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"] = "93.35";
    v["smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio"] = "4.82";
    v["smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"] = "0.5";
    const diagnosis d = diagnose(from_csv(v));
    expect_well_formed(d);
    EXPECT_EQ(d.kind, bound::compute);
    EXPECT_NE(d.headline.find("balanced"), std::string::npos) << d.headline;
    EXPECT_NE(d.headline.find("top stall gmma"), std::string::npos) << d.headline;
    EXPECT_EQ(d.directions.at(0).kb_anchor, "compute-wgmma-pipeline");
    // Without the tensor pipe saturated, memory >= SM wins.
    v["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"] = "20";
    EXPECT_EQ(diagnose(from_csv(v)).kind, bound::memory);
}

TEST(DiagnosisTest, ShortKernelIsLaunchBound) {
    auto v = base_values();
    v["gpu__time_duration.sum"] = "4,200";  // 4.2 µs
    v["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = "70";  // SOL of a tiny kernel is noise
    v["launch__waves_per_multiprocessor"] = "0.05";
    const diagnosis d = diagnose(from_csv(v));
    expect_well_formed(d);
    EXPECT_EQ(d.kind, bound::launch);
    EXPECT_NE(d.headline.find("4.2 \xC2\xB5s"), std::string::npos) << d.headline;
    EXPECT_EQ(d.directions.at(0).kb_anchor, "launch-fusion");
    EXPECT_TRUE(cites(d, "launch-cuda-graphs"));
    EXPECT_TRUE(cites(d, "launch-persistent"));  // 0.05 waves
    const auto* dur = evidence(d, "duration");
    ASSERT_NE(dur, nullptr);
    EXPECT_TRUE(dur->met);
    EXPECT_EQ(dur->value, 4200.0);
}

TEST(DiagnosisTest, LaunchBoundEdges) {
    auto v = base_values();
    v["gpu__time_duration.sum"] = "10,000";  // 10 µs is not < 10 µs
    EXPECT_NE(diagnose(from_csv(v)).kind, bound::launch);
    v["gpu__time_duration.sum"] = "9,999";
    EXPECT_EQ(diagnose(from_csv(v)).kind, bound::launch);
    // A tiny grid that runs 30 µs: launch-bound; the same grid for 60 µs is not.
    v["gpu__time_duration.sum"] = "30,000";
    v["launch__waves_per_multiprocessor"] = "0.1";
    EXPECT_EQ(diagnose(from_csv(v)).kind, bound::launch);
    v["gpu__time_duration.sum"] = "60,000";
    EXPECT_EQ(diagnose(from_csv(v)).kind, bound::occupancy);  // waves < 1
    v["launch__waves_per_multiprocessor"] = "0.5";
    v["gpu__time_duration.sum"] = "30,000";
    EXPECT_EQ(diagnose(from_csv(v)).kind, bound::occupancy);
}

TEST(DiagnosisTest, HighThroughputEdge) {
    auto v = base_values();
    v["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] = "60";
    v["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] = "59";
    EXPECT_EQ(diagnose(from_csv(v)).kind, bound::memory);
    v["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] = "59.9";
    EXPECT_EQ(diagnose(from_csv(v)).kind, bound::latency);
}

TEST(DiagnosisTest, RegisterLimitedOccupancy) {
    auto v = base_values();
    v["sm__warps_active.avg.pct_of_peak_sustained_active"] = "18";
    v["sm__maximum_warps_per_active_cycle_pct"] = "18.75";  // < 25 %
    v["launch__occupancy_limit_registers"] = "1";
    v["launch__registers_per_thread"] = "168";
    v["sass__inst_executed_register_spilling"] = "1,024";
    const diagnosis d = diagnose(from_csv(v));
    expect_well_formed(d);
    EXPECT_EQ(d.kind, bound::occupancy);
    EXPECT_NE(d.headline.find("limiter: registers"), std::string::npos) << d.headline;
    EXPECT_TRUE(cites(d, "occ-registers"));
    const auto* spill = evidence(d, "register spilling");
    ASSERT_NE(spill, nullptr);
    EXPECT_TRUE(spill->met);
}

TEST(DiagnosisTest, SharedMemoryLimitedAndImbalance) {
    auto v = base_values();
    v["sm__maximum_warps_per_active_cycle_pct"] = "12.5";
    v["launch__occupancy_limit_shared_mem"] = "1";
    v["launch__shared_mem_per_block"] = "200,000";
    EXPECT_TRUE(cites(diagnose(from_csv(v)), "occ-shared-memory"));

    auto w = base_values();
    w["sm__warps_active.avg.pct_of_peak_sustained_active"] = "30";  // < 0.5 × 75
    const diagnosis d = diagnose(from_csv(w));
    expect_well_formed(d);
    EXPECT_EQ(d.kind, bound::occupancy);
    EXPECT_TRUE(cites(d, "occ-waves-tail"));
}

TEST(DiagnosisTest, LatencyBoundByTopStall) {
    const diagnosis d = diagnose(from_csv(base_values()));
    expect_well_formed(d);
    EXPECT_EQ(d.kind, bound::latency);
    EXPECT_NE(d.headline.find("top stall long_scoreboard 75 %"), std::string::npos) << d.headline;  // 6 of 8
    EXPECT_EQ(d.directions.at(0).kb_anchor, "lat-bytes-in-flight");

    auto v = base_values();
    v["smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio"] = "9";
    const diagnosis b = diagnose(from_csv(v));
    expect_well_formed(b);
    EXPECT_EQ(b.directions.at(0).kb_anchor, "lat-fewer-syncs");
}

TEST(DiagnosisTest, MissingSpeedOfLightIsUnknown) {
    const diagnosis d = diagnose(from_csv({{"gpu__time_duration.sum", "1,000,000"}}));
    EXPECT_EQ(d.kind, bound::unknown);
    EXPECT_TRUE(d.directions.empty());
    ASSERT_FALSE(d.notes.empty());
    EXPECT_NE(d.notes[0].find("SpeedOfLight"), std::string::npos);
    // Too short to matter: launch-bound needs only the duration.
    EXPECT_EQ(diagnose(from_csv({{"gpu__time_duration.sum", "3,000"}})).kind, bound::launch);
}

TEST(DiagnosisTest, EnumStringsRoundTrip) {
    for (bound b : {bound::memory, bound::compute, bound::latency, bound::occupancy, bound::launch, bound::unknown})
        EXPECT_EQ(bound_from_string(to_string(b)), b);
    EXPECT_EQ(to_string(bound::occupancy), "occupancy-limited");
    EXPECT_EQ(to_string(memory_level::cache), "l1-l2");
    EXPECT_EQ(memory_level_from_string("dram"), memory_level::dram);
    EXPECT_THROW((void)bound_from_string("dram-bound"), kloop::usage_error);
    EXPECT_THROW((void)memory_level_from_string("l2"), kloop::usage_error);
}

TEST(DiagnosisTest, JsonShape) {
    const auto j = to_json(diagnose(v0()));
    EXPECT_EQ(j.at("bound"), "memory-bound");
    EXPECT_EQ(j.at("memory_level"), "l1-l2");
    EXPECT_EQ(j.at("directions").at(0).at("kb"), "docs/knowledge-base.md#mem-coalescing");
    EXPECT_TRUE(j.at("evidence").at(0).contains("threshold"));
    EXPECT_TRUE(j.at("notes").is_array());
    EXPECT_TRUE(to_json(diagnose(from_csv(base_values()))).at("memory_level").is_null());
}

TEST(DiagnosisTest, EveryAnchorExistsInTheKnowledgeBase) {
    const std::string kb = read_text(std::string(KLOOP_TEST_SOURCE_DIR) + "/" + std::string(knowledge_base_path));
    for (const auto& a : knowledge_base_anchors())
        EXPECT_NE(kb.find("<a id=\"" + a + "\"></a>"), std::string::npos) << "missing anchor " << a;
}

TEST(DiagnosisTest, HumanNumbers) {
    EXPECT_EQ(format_bytes_per_s(4.21e12), "4.21 TB/s");
    EXPECT_EQ(format_bytes_per_s(318.02593e9), "318 GB/s");
    EXPECT_EQ(format_bytes_per_s(6.6e9), "6.6 GB/s");
    EXPECT_EQ(format_duration_ns(2640960), "2.64 ms");
    EXPECT_EQ(format_duration_ns(4200), "4.2 \xC2\xB5s");
    EXPECT_EQ(format_duration_ns(850), "850 ns");
    EXPECT_EQ(format_bytes(536952832), "537 MB");
    EXPECT_EQ(format_bytes(1.07e9), "1.07 GB");
}
