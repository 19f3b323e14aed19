// Unit under test: eval/candidate_integrity — the gate's census gathered from runner events, the
// event-time proxies from timed medians, and census_time_vs_event judged against them (the path
// by which `compare` and `iterate` hold a side's gate census against its A/B medians).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "eval/candidate_integrity.hpp"
#include "unit/runner/event_lines.hpp"

namespace {

using nlohmann::json;
namespace ev = kloop::eval;

const ev::integrity_check& find(const std::vector<ev::integrity_check>& v, const std::string& name) {
    for (const auto& c : v)
        if (c.name == name) return c;
    throw std::runtime_error("no check " + name);
}

// One gate call of fwd/big, trial 0, whose census saw `span_ns` of one kernel on a side stream.
ev::gate_census census_of(std::uint64_t span_ns) {
    kloop::runner::job job;
    kloop::runner::call_plan plan;
    plan.mode = "fwd";
    plan.shape = "big";
    job.calls.push_back(plan);
    job.gate.push_back({7, 0, 0, 1});
    const json kernel = {{"name", "_Z6kernelPf"}, {"grid", {1, 1, 1}}, {"block", {256, 1, 1}}, {"start_ns", 1000},
                         {"end_ns", 1000 + span_ns}, {"duration_ns", span_ns}, {"stream", 99}};
    const auto events = kloop::testing::typed({
        kloop::testing::start_line({{"candidate_device", {{"flush_bytes_per_sample", 120u << 20}}}}),
        {{"event", "case_result"}, {"id", 7}, {"census", {{"available", true}, {"kernels", {kernel}}, {"dropped", 0}}}},
        {{"event", "case_result"}, {"id", 8}, {"census", {{"available", true}, {"kernels", json::array()}}}},  // no such case
    });
    return ev::gather_gate_census(job, events);
}

}  // namespace

TEST(CandidateIntegrityTest, GathersTheGateCallsAndTheDeviceFlush) {
    const auto c = census_of(80000);
    ASSERT_EQ(c.calls.size(), 1u);
    EXPECT_EQ(c.calls[0].key, "fwd/big");
    EXPECT_EQ(c.calls[0].label, "fwd/big trial 0");
    EXPECT_FALSE(c.calls[0].event_s);
    EXPECT_EQ(c.device_flush_bytes, std::uint64_t{120} << 20);
}

TEST(CandidateIntegrityTest, ProxiesOnlyForShapesLargerThanTheFlush) {
    const std::uint64_t flush = std::uint64_t{120} << 20;
    const auto p = ev::event_proxies({{"fwd/big", 4e-6, 268e6, 0}, {"fwd/small", 2e-6, 33e6, 0}, {"bwd/big", 1e-4, std::nullopt, 0}},
                                     0, flush);
    EXPECT_EQ(p.size(), 1u);
    ASSERT_TRUE(p.count("fwd/big"));
    EXPECT_DOUBLE_EQ(p.at("fwd/big"), 4e-6);
    // A per-shape flush larger than the shape disqualifies it; without any flush, 256 MiB.
    EXPECT_TRUE(ev::event_proxies({{"fwd/big", 4e-6, 268e6, 300u << 20}}, 0, flush).empty());
    EXPECT_TRUE(ev::event_proxies({{"fwd/big", 4e-6, 200e6, 0}}, 0, 0).empty());
}

// The side-stream cheat of examples/rmsnorm-cuda/broken/side_stream as the H200 measured it: a
// 4.2 us "time" for ~80 us of kernels. Fails against the median; passes an honest one; skipped
// with no timed shape to compare with.
TEST(CandidateIntegrityTest, TimeOutsideTheWindowFailsAgainstTheTimedMedian) {
    const auto c = census_of(80000);
    const auto cheat = find(ev::judge_gate_census(c, {{"fwd/big", 4.2e-6}}), "census_time_vs_event");
    EXPECT_EQ(cheat.status, ev::check_status::fail) << cheat.detail;
    const auto honest = find(ev::judge_gate_census(c, {{"fwd/big", 85e-6}}), "census_time_vs_event");
    EXPECT_EQ(honest.status, ev::check_status::pass) << honest.detail;
    const auto none = find(ev::judge_gate_census(c, {}), "census_time_vs_event");
    EXPECT_EQ(none.status, ev::check_status::skipped) << none.detail;
}
