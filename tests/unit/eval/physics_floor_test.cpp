// Unit under test: eval/physics_floor — the floor a (mode, shape) median is held against, its
// margins, the bounds a runner's start event gives (GPU datasheet raised by the calibration cache,
// the host screen), and the integrity check that rejects an evaluation.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "eval/calibration.hpp"
#include "eval/physics_floor.hpp"
#include "unit/runner/event_lines.hpp"
#include "platform/file_io.hpp"

namespace {

using nlohmann::json;
namespace fs = std::filesystem;
namespace ev = kloop::eval;
using kloop::eval::check_status;

constexpr double k_h200_bw = 4.8e12;
constexpr std::uint64_t k_l2 = 60ull << 20;

ev::physics_bounds h200() {
    return ev::gpu_physics_bounds(*kloop::profile::datasheet_peaks("NVIDIA H200"), k_l2);
}

// A read-only shape (nothing written, so no cache credit): the floor is bytes / 4.8 TB/s.
ev::physics_shape read_only(double bytes, double median_s) {
    return {"fwd", "big", median_s, bytes, std::nullopt, 0.0};
}

class scoped_home {
public:
    scoped_home() : m_dir("kloop-physics-test") { ::setenv("KLOOP_HOME", m_dir.path().c_str(), 1); }
    ~scoped_home() { ::unsetenv("KLOOP_HOME"); }

private:
    kloop::platform::scoped_temp_dir m_dir;
};

std::vector<kloop::runner::event> cuda_start(const std::string& name) {
    return kloop::testing::typed(
        {kloop::testing::start_line({{"candidate_device", {{"device", "cuda"}, {"name", name}, {"l2_bytes", k_l2}}}})});
}

}  // namespace

TEST(PhysicsFloorTest, GpuBoundsAreTheDatasheetWithTheFastestRate) {
    const auto b = h200();
    EXPECT_DOUBLE_EQ(b.bytes_per_s, 4.8e12);
    EXPECT_DOUBLE_EQ(b.flops_per_s, 989e12);  // the tensor-core rate, above FP32's 67 TFLOP/s
    EXPECT_EQ(b.cache_bytes, k_l2);
    EXPECT_NE(b.source.find("datasheet"), std::string::npos) << b.source;
}

TEST(PhysicsFloorTest, AnHonestMedianPasses) {
    const double bytes = 1e9;
    const auto v = ev::judge_physics_shape(read_only(bytes, bytes / 4.0e12), h200());  // 4.0 TB/s
    EXPECT_EQ(v.status, check_status::pass) << v.text;
    EXPECT_NEAR(v.floor_s, bytes / k_h200_bw, 1e-15);
    EXPECT_NEAR(v.achieved_bytes_per_s, 4.0e12, 1.0);
}

TEST(PhysicsFloorTest, AMedianFasterThanTheHardwareFailsNamingShapeRateAndPeak) {
    const double bytes = 1e9;
    const auto v = ev::judge_physics_shape(read_only(bytes, bytes / 8.1e12), h200());  // the 8.1 TB/s "H200"
    EXPECT_EQ(v.status, check_status::fail) << v.text;
    EXPECT_NE(v.text.find("fwd/big"), std::string::npos) << v.text;
    EXPECT_NE(v.text.find("8.10 TB/s"), std::string::npos) << v.text;
    EXPECT_NE(v.text.find("4.80 TB/s"), std::string::npos) << v.text;
}

TEST(PhysicsFloorTest, MarginEdges) {
    const double bytes = 1e9;
    const double floor = bytes / k_h200_bw;
    auto at = [&](double median) { return ev::judge_physics_shape(read_only(bytes, median), h200()).status; };
    EXPECT_EQ(at(floor), check_status::pass);
    EXPECT_EQ(at(floor * (1 - ev::physics_warn_margin)), check_status::pass);  // the bound itself is inside
    EXPECT_EQ(at(floor * (1 - ev::physics_warn_margin) * 0.999), check_status::warn);
    EXPECT_EQ(at(floor * (1 - ev::physics_fail_margin)), check_status::warn);
    EXPECT_EQ(at(floor * (1 - ev::physics_fail_margin) * 0.999), check_status::fail);
}

TEST(PhysicsFloorTest, WithoutACostFormulaTheShapeIsSkipped) {
    ev::physics_shape s{"fwd", "big", 1e-3, std::nullopt, std::nullopt, 0.0};
    const auto v = ev::judge_physics_shape(s, h200());
    EXPECT_EQ(v.status, check_status::skipped);
    const auto c = ev::physics_floor_check({s}, {h200(), ""});
    EXPECT_EQ(c.name, "physics_floor");
    EXPECT_EQ(c.status, check_status::skipped);
    EXPECT_NE(c.detail.find("no cost formula"), std::string::npos) << c.detail;
}

TEST(PhysicsFloorTest, WrittenBytesTheL2CanHoldAreNotCountedAgainstDram) {
    // 16 MB in, 16 MB out at 4.4 TB/s of reads: writes still in L2 when the window ends make the
    // spec's 32 MB look like 8.8 TB/s. Honest: passes.
    const double in = 16e6, out = 16e6;
    ev::physics_shape s{"fwd", "small", in / 4.4e12, in + out, std::nullopt, out};
    const auto v = ev::judge_physics_shape(s, h200());
    EXPECT_EQ(v.status, check_status::pass) << v.text;
    EXPECT_NEAR(v.floor_s, in / k_h200_bw, 1e-15);
    // The same time with nothing written (all 32 MB read) is impossible.
    s.written_bytes = 0;
    EXPECT_EQ(ev::judge_physics_shape(s, h200()).status, check_status::fail);
    // The credit stops at the cache's size.
    ev::physics_shape huge{"fwd", "huge", 1.0, 2e9, std::nullopt, 1e9};
    EXPECT_NEAR(ev::judge_physics_shape(huge, h200()).floor_s, (2e9 - static_cast<double>(k_l2)) / k_h200_bw, 1e-12);
}

TEST(PhysicsFloorTest, ComputeBoundShapesUseTheFlopRate) {
    ev::physics_shape s{"fwd", "gemm", 0, 1e6, 1e13, 0.0};  // 10 TFLOP: 10.1 ms at 989 TFLOP/s
    s.median_s = 1e13 / 2000e12;                             // 2000 TFLOP/s
    const auto v = ev::judge_physics_shape(s, h200());
    EXPECT_EQ(v.status, check_status::fail) << v.text;
    EXPECT_NE(v.text.find("compute-bound"), std::string::npos) << v.text;
    EXPECT_NE(v.text.find("TFLOP/s"), std::string::npos) << v.text;
    s.median_s = 1e13 / 700e12;
    EXPECT_EQ(ev::judge_physics_shape(s, h200()).status, check_status::pass);
}

TEST(PhysicsFloorTest, TheHostScreenBoundsBytesPerLogicalCpuAndSkipsFlops) {
    const auto b = ev::host_physics_bounds(2, 32u << 20);
    EXPECT_DOUBLE_EQ(b.bytes_per_s, 2 * ev::host_bytes_per_s_per_cpu);
    EXPECT_DOUBLE_EQ(b.flops_per_s, 0);
    EXPECT_NE(b.source.find("not a measurement"), std::string::npos);
    ev::physics_shape flops_only{"fwd", "a", 1e-9, std::nullopt, 1e12, 0.0};
    EXPECT_EQ(ev::judge_physics_shape(flops_only, b).status, check_status::skipped);
    ev::physics_shape impossible{"fwd", "a", 1e-3, 1e12, std::nullopt, 0.0};  // 1 PB/s
    EXPECT_EQ(ev::judge_physics_shape(impossible, b).status, check_status::fail);
    ev::physics_shape honest{"fwd", "a", 1e-3, 20e6, std::nullopt, 0.0};  // 20 GB/s
    EXPECT_EQ(ev::judge_physics_shape(honest, b).status, check_status::pass);
}

TEST(PhysicsFloorTest, TheCheckFailsOnAnyShapeAndCountsThem) {
    const double bytes = 1e9;
    std::vector<ev::physics_shape> shapes = {read_only(bytes, bytes / 4e12), read_only(bytes, bytes / 8e12),
                                             read_only(bytes, bytes / 9e12)};
    shapes[1].shape = "second";
    shapes[2].shape = "third";
    const auto c = ev::physics_floor_check(shapes, {h200(), ""}, "A/B medians: ");
    EXPECT_EQ(c.status, check_status::fail);
    EXPECT_EQ(c.detail.rfind("A/B medians: fwd/second", 0), 0u) << c.detail;
    EXPECT_NE(c.detail.find("2 of 3 shapes"), std::string::npos) << c.detail;
    EXPECT_NE(c.detail.find("spec's bytes/flops formula"), std::string::npos) << c.detail;

    const auto ok = ev::physics_floor_check({shapes[0]}, {h200(), ""});
    EXPECT_EQ(ok.status, check_status::pass) << ok.detail;
    const auto none = ev::physics_floor_check(shapes, {std::nullopt, "no datasheet peaks for GPU 'X'"});
    EXPECT_EQ(none.status, check_status::skipped);
    EXPECT_NE(none.detail.find("no datasheet peaks"), std::string::npos);
}

TEST(PhysicsFloorTest, BoundsFromTheRunnersStartEvent) {
    scoped_home home;
    ev::environment_info env;
    env.logical_cpus = 4;
    env.llc_bytes = 8u << 20;

    const auto gpu = ev::physics_bounds_from_events(cuda_start("NVIDIA H200"), env);
    ASSERT_TRUE(gpu.bounds) << gpu.why_not;
    EXPECT_DOUBLE_EQ(gpu.bounds->bytes_per_s, 4.8e12);
    EXPECT_EQ(gpu.bounds->cache_bytes, k_l2);

    const auto cpu = ev::physics_bounds_from_events(
        kloop::testing::typed({kloop::testing::start_line({{"candidate_device", {{"device", "cpu"}}}})}), env);
    ASSERT_TRUE(cpu.bounds);
    EXPECT_DOUBLE_EQ(cpu.bounds->bytes_per_s, 4 * ev::host_bytes_per_s_per_cpu);
    EXPECT_EQ(cpu.bounds->cache_bytes, env.llc_bytes);

    const auto unknown = ev::physics_bounds_from_events(cuda_start("Some Future GPU"), env);
    EXPECT_FALSE(unknown.bounds);
    EXPECT_NE(unknown.why_not.find("Some Future GPU"), std::string::npos);
    EXPECT_FALSE(ev::physics_bounds_from_events({}, env).bounds);
}

TEST(PhysicsFloorTest, ACalibratedPeakAboveTheDatasheetRaisesTheBound) {
    scoped_home home;
    kloop::profile::device_peaks cal{"NVIDIA H200", 5.2e12, 50e12, 400e12, kloop::profile::peak_source::calibrated};
    ev::save_calibration(cal, "2026-12-02T00:00:00Z");
    const auto b = ev::physics_bounds_from_events(cuda_start("NVIDIA H200"), {});
    ASSERT_TRUE(b.bounds);
    EXPECT_DOUBLE_EQ(b.bounds->bytes_per_s, 5.2e12);     // calibrated, higher
    EXPECT_DOUBLE_EQ(b.bounds->flops_per_s, 989e12);     // datasheet, higher
    EXPECT_NE(b.bounds->source.find("calibrated"), std::string::npos) << b.bounds->source;
}

TEST(PhysicsFloorTest, ACorruptCalibrationCacheFallsBackToTheDatasheet) {
    scoped_home home;
    const auto path = ev::calibration_file("NVIDIA H200");
    kloop::platform::ensure_directory(path.parent_path());
    kloop::platform::write_file_atomic(path, "{ not json");
    const auto b = ev::physics_bounds_from_events(cuda_start("NVIDIA H200"), {});
    ASSERT_TRUE(b.bounds);
    EXPECT_DOUBLE_EQ(b.bounds->bytes_per_s, 4.8e12);
    EXPECT_NE(b.bounds->source.find("calibration cache ignored"), std::string::npos) << b.bounds->source;
}

TEST(PhysicsFloorTest, WrittenBytesAreOutputsAndInOutInputs) {
    kloop::runner::call_plan plan;
    kloop::runner::tensor_plan x{"x", kloop::dtype::f32, {4, 8}, "", false, {}};
    kloop::runner::tensor_plan state{"state", kloop::dtype::f16, {10}, "", true, {}};
    kloop::runner::tensor_plan y{"y", kloop::dtype::bf16, {4, 8}, "", false, {}};
    plan.inputs = {x, state};
    plan.outputs = {y};
    EXPECT_DOUBLE_EQ(ev::written_bytes_of(plan), 2.0 * 32 + 2.0 * 10);
}

TEST(PhysicsFloorTest, AFailRejectsAPassedEvaluationAndReplacesTheEntry) {
    ev::evaluation e;
    e.integrity.push_back(ev::physics_floor_not_timed());
    const double bytes = 1e9;
    const auto c = ev::physics_floor_check({read_only(bytes, bytes / 8e12)}, {h200(), ""});
    ev::apply_physics_check(e, c);
    ASSERT_EQ(e.integrity.size(), 1u);
    EXPECT_EQ(e.integrity[0].status, check_status::fail);
    EXPECT_EQ(e.status, ev::disposition::gate_failed);
    EXPECT_EQ(e.reason.rfind("integrity check 'physics_floor' failed: fwd/big", 0), 0u) << e.reason;

    // An evaluation already rejected keeps its own reason.
    ev::evaluation red;
    red.status = ev::disposition::gate_failed;
    red.reason = "the gate is red";
    ev::apply_physics_check(red, c);
    EXPECT_EQ(red.reason, "the gate is red");
}
