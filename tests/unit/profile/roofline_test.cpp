// Unit under test: profile/roofline — datasheet peaks, the peaks' JSON round trip, the floor of an
// op with known numbers, % of floor, re-read factor, the below-floor suspicion, bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "profile/roofline.hpp"

using namespace kloop::profile;

namespace {

device_peaks h200() {
    const auto p = datasheet_peaks("NVIDIA H200");
    if (!p) throw std::runtime_error("no H200 datasheet entry");
    return *p;
}

}  // namespace

TEST(RooflineTest, DatasheetTableBySubstring) {
    const auto p = datasheet_peaks("NVIDIA H200");
    ASSERT_TRUE(p.has_value());
    EXPECT_EQ(p->device_name, "NVIDIA H200");
    EXPECT_EQ(p->dram_bytes_per_s, 4.8e12);
    EXPECT_EQ(p->fp32_flops_per_s, 67e12);
    EXPECT_EQ(p->tensor_flops_per_s, 989e12);
    EXPECT_EQ(p->source, peak_source::datasheet);
    EXPECT_EQ(datasheet_peaks("nvidia h200")->dram_bytes_per_s, 4.8e12);  // case-insensitive

    EXPECT_EQ(datasheet_peaks("NVIDIA H100 80GB HBM3")->dram_bytes_per_s, 3.35e12);
    EXPECT_EQ(datasheet_peaks("NVIDIA H100 SXM5 80GB")->tensor_flops_per_s, 989e12);
    EXPECT_EQ(datasheet_peaks("NVIDIA H100 PCIe")->dram_bytes_per_s, 2.0e12);  // more specific entry first
    EXPECT_EQ(datasheet_peaks("NVIDIA H200 NVL")->tensor_flops_per_s, 835e12);
    const auto a100 = datasheet_peaks("NVIDIA A100-SXM4-80GB");
    ASSERT_TRUE(a100.has_value());
    EXPECT_EQ(a100->dram_bytes_per_s, 2.039e12);
    EXPECT_EQ(a100->fp32_flops_per_s, 19.5e12);
    EXPECT_EQ(a100->tensor_flops_per_s, 312e12);
    EXPECT_EQ(datasheet_peaks("NVIDIA A100-SXM4-40GB")->dram_bytes_per_s, 1.555e12);

    EXPECT_FALSE(datasheet_peaks("NVIDIA GeForce RTX 4090").has_value());
    EXPECT_FALSE(datasheet_peaks("").has_value());
}

TEST(RooflineTest, PeaksJsonRoundTrip) {
    device_peaks p{"NVIDIA H200", 4.41e12, 61.5e12, 790e12, peak_source::calibrated};
    const auto j = to_json(p);
    EXPECT_EQ(j.at("source"), "calibrated");
    EXPECT_EQ(j.at("dram_bytes_per_s"), 4.41e12);
    const device_peaks q = device_peaks_from_json(nlohmann::json::parse(j.dump()));
    EXPECT_EQ(q.device_name, p.device_name);
    EXPECT_EQ(q.dram_bytes_per_s, p.dram_bytes_per_s);
    EXPECT_EQ(q.fp32_flops_per_s, p.fp32_flops_per_s);
    EXPECT_EQ(q.tensor_flops_per_s, p.tensor_flops_per_s);
    EXPECT_EQ(q.source, peak_source::calibrated);
    EXPECT_EQ(device_peaks_from_json(to_json(h200())).source, peak_source::datasheet);
}

TEST(RooflineTest, PeaksJsonErrorsNameTheKey) {
    auto message = [](const nlohmann::json& j) -> std::string {
        try {
            (void)device_peaks_from_json(j);
        } catch (const kloop::usage_error& e) {
            return e.what();
        }
        return "no error";
    };
    nlohmann::json good = to_json(h200());
    auto without = [&](const char* key) {
        auto j = good;
        j.erase(key);
        return j;
    };
    EXPECT_NE(message(without("dram_bytes_per_s")).find("'dram_bytes_per_s' is missing"), std::string::npos);
    EXPECT_NE(message(without("device")).find("'device'"), std::string::npos);
    auto bad = good;
    bad["tensor_flops_per_s"] = "fast";
    EXPECT_NE(message(bad).find("'tensor_flops_per_s' is not a number"), std::string::npos);
    bad = good;
    bad["fp32_flops_per_s"] = -1.0;
    EXPECT_NE(message(bad).find("'fp32_flops_per_s' must be"), std::string::npos);
    bad = good;
    bad["source"] = "guessed";
    EXPECT_NE(message(bad).find("unknown source 'guessed'"), std::string::npos);
    EXPECT_NE(message(nlohmann::json::array()).find("expected a JSON object"), std::string::npos);
}

TEST(RooflineTest, StreamingOpIsMemoryBound) {
    // 4.8 GB at 4.8 TB/s = 1 ms; 1.2e9 FLOP at 67 TF/s = 17.9 µs.
    const auto p = roofline_floor(1.2e9, 4.8e9, h200(), false);
    EXPECT_EQ(p.bound, roofline_bound::memory);
    EXPECT_DOUBLE_EQ(p.memory_time_ns, 1e6);
    EXPECT_NEAR(p.compute_time_ns, 1.2e9 / 67e12 * 1e9, 1e-6);
    EXPECT_DOUBLE_EQ(p.floor_ns, 1e6);
    EXPECT_DOUBLE_EQ(p.arithmetic_intensity, 0.25);
    EXPECT_DOUBLE_EQ(p.ridge_point, 67e12 / 4.8e12);  // ≈ 14 FLOP/B for FP32
    EXPECT_FALSE(p.uses_tensor_cores);
    EXPECT_EQ(p.rate_flops_per_s, 67e12);
}

TEST(RooflineTest, RmsnormForwardFloorOnH200) {
    // The recorded v0 capture's shape: N = 16384, D = 8192; spec flops 4ND, bytes 2(2ND + D) + 4N.
    const double n = 16384, d = 8192;
    const double flops = 4 * n * d, bytes = 2 * (2 * n * d + d) + 4 * n;
    EXPECT_EQ(bytes, 536952832.0);
    const auto p = roofline_floor(flops, bytes, h200(), false);
    EXPECT_EQ(p.bound, roofline_bound::memory);
    EXPECT_NEAR(p.floor_ns, 111865.17, 0.01);  // 112 µs
    EXPECT_NEAR(pct_of_floor(p, 2640960.0), 4.2358, 1e-4);  // the naive kernel: 4 % of the floor
}

TEST(RooflineTest, Bf16GemmIsComputeBoundOnTensorCores) {
    // 8192³ bf16 GEMM: 2·8192³ FLOP, 3·8192²·2 bytes.
    const double m = 8192;
    const double flops = 2 * m * m * m, bytes = 3 * m * m * 2;
    const auto t = roofline_floor(flops, bytes, h200(), true);
    EXPECT_EQ(t.bound, roofline_bound::compute);
    EXPECT_NEAR(t.floor_ns, flops / 989e12 * 1e9, 1e-3);  // 1.11 ms
    EXPECT_NEAR(t.floor_ns, 1.1117e6, 1e2);
    EXPECT_NEAR(t.memory_time_ns, 83886.08, 0.01);  // 403 MB at 4.8 TB/s
    EXPECT_NEAR(t.ridge_point, 989.0 / 4.8, 1e-9);  // ≈ 206 FLOP/B
    EXPECT_NEAR(t.arithmetic_intensity, m / 3, 1e-9);
    EXPECT_EQ(t.rate_flops_per_s, 989e12);
    // The same op on FP32 CUDA cores: 15× slower floor.
    const auto f = roofline_floor(flops, bytes, h200(), false);
    EXPECT_NEAR(f.floor_ns, flops / 67e12 * 1e9, 1e-3);
    // cuBLAS measured 1.27 ms: 87.5 % of the floor.
    EXPECT_NEAR(pct_of_floor(t, 1.27e6), t.floor_ns / 1.27e6 * 100, 1e-9);
}

TEST(RooflineTest, ZeroBytesAndTies) {
    const auto p = roofline_floor(67e6, 0, h200(), false);
    EXPECT_EQ(p.bound, roofline_bound::compute);
    EXPECT_EQ(p.arithmetic_intensity, std::numeric_limits<double>::infinity());
    EXPECT_DOUBLE_EQ(p.floor_ns, 1e3);
    const auto z = roofline_floor(0, 0, h200(), false);
    EXPECT_EQ(z.floor_ns, 0.0);
    EXPECT_EQ(z.bound, roofline_bound::memory);  // a tie goes to memory
    EXPECT_EQ(to_string(roofline_bound::memory), "memory");
    EXPECT_EQ(to_string(roofline_bound::compute), "compute");
    EXPECT_EQ(roofline_bound_from_string("compute"), roofline_bound::compute);
    EXPECT_EQ(roofline_bound_from_string("memory"), roofline_bound::memory);
    EXPECT_THROW((void)roofline_bound_from_string("dram"), kloop::usage_error);
}

TEST(RooflineTest, RereadFactor) {
    EXPECT_NEAR(reread_factor(318.02593e9 * 2.64096e-3, 536952832.0), 1.5642, 1e-4);
    EXPECT_DOUBLE_EQ(reread_factor(1e9, 1e9), 1.0);
    EXPECT_THROW((void)reread_factor(1e9, 0), kloop::usage_error);
    EXPECT_THROW((void)reread_factor(-1, 1e9), kloop::usage_error);
}

TEST(RooflineTest, SuspectBelowFloor) {
    const auto p = roofline_floor(0, 4.8e9, h200(), false);  // floor 1 ms
    EXPECT_EQ(default_suspect_margin, 0.10);
    EXPECT_FALSE(suspect_below_floor(p, 2e6));
    EXPECT_FALSE(suspect_below_floor(p, 0.95e6));   // 5 % under: datasheet vs reality, noise
    EXPECT_FALSE(suspect_below_floor(p, 0.9e6));    // exactly at the margin
    EXPECT_TRUE(suspect_below_floor(p, 0.89e6));
    EXPECT_TRUE(suspect_below_floor(p, 0.99e6, 0.0));
    EXPECT_FALSE(suspect_below_floor(p, 0.7e6, 0.5));
    EXPECT_THROW((void)suspect_below_floor(p, 1e6, 1.0), kloop::usage_error);
    EXPECT_THROW((void)suspect_below_floor(p, 1e6, -0.1), kloop::usage_error);
    EXPECT_THROW((void)suspect_below_floor(p, 0), kloop::usage_error);
    EXPECT_DOUBLE_EQ(pct_of_floor(p, 2e6), 50.0);
    EXPECT_DOUBLE_EQ(pct_of_floor(p, 0.5e6), 200.0);
    EXPECT_THROW((void)pct_of_floor(p, 0), kloop::usage_error);
    EXPECT_THROW((void)pct_of_floor(p, std::nan("")), kloop::usage_error);
}

TEST(RooflineTest, BadInputsThrowNamingTheField) {
    auto message = [](auto&& f) -> std::string {
        try {
            f();
        } catch (const kloop::usage_error& e) {
            return e.what();
        }
        return "no error";
    };
    device_peaks no_tensor{"Mystery GPU", 1e12, 10e12, 0, peak_source::calibrated};
    EXPECT_NE(message([&] { (void)roofline_floor(1, 1, no_tensor, true); }).find("tensor_flops_per_s must be > 0"),
              std::string::npos);
    EXPECT_NO_THROW((void)roofline_floor(1, 1, no_tensor, false));  // FP32 floor needs no tensor rate
    device_peaks no_bw{"Mystery GPU", 0, 10e12, 0, peak_source::calibrated};
    EXPECT_NE(message([&] { (void)roofline_floor(1, 1, no_bw, false); }).find("dram_bytes_per_s"), std::string::npos);
    EXPECT_NE(message([&] { (void)roofline_floor(-1, 1, h200(), false); }).find("flops"), std::string::npos);
    EXPECT_NE(message([&] { (void)roofline_floor(1, std::nan(""), h200(), false); }).find("bytes"), std::string::npos);
    EXPECT_EQ(peak_source_from_string("datasheet"), peak_source::datasheet);
    EXPECT_THROW((void)peak_source_from_string("Datasheet"), kloop::usage_error);
}
