// Unit under test: eval/plan_builder — spec + options → runner jobs (seeds, filters, shapes).
#include <gtest/gtest.h>

#include <map>

#include <set>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "eval/plan_builder.hpp"
#include "spec/spec_loader.hpp"

namespace {

const kloop::spec::op_spec& example() {
    static const auto s = kloop::spec::load_op_spec(std::string(KLOOP_TEST_SOURCE_DIR) + "/examples/rmsnorm");
    return s;
}

}  // namespace

TEST(PlanBuilderTest, SeedsAreTwoFixedPlusDrawn) {
    const auto seeds = kloop::eval::gate_seeds(example(), 3, 987654321);
    ASSERT_EQ(seeds.size(), 3u);
    EXPECT_EQ(seeds[0], example().fixed_seeds[0]);
    EXPECT_EQ(seeds[1], example().fixed_seeds[1]);
    EXPECT_EQ(seeds[2], 987654321u);
    EXPECT_NE(kloop::eval::draw_seed(), kloop::eval::draw_seed());
}

TEST(PlanBuilderTest, GateCoversEveryGateShapeModeAndTrialWithResolvedShapes) {
    kloop::eval::evaluation_options o;
    o.held_out = 0;
    const auto job = kloop::eval::build_gate_job(example(), o, {1, 2, 3});
    std::size_t expected = 0, further = 0;
    for (const auto& m : example().modes) {
        std::size_t per_shape = 1, further_per_shape = 0;
        for (const auto& t : m.inputs) further_per_shape += t.adversarial.size();
        per_shape += further_per_shape;
        for (const auto& s : example().shapes) {
            expected += s.gate ? per_shape : 0;
            further += s.gate ? further_per_shape : 0;
        }
    }
    EXPECT_EQ(job.calls.size(), expected);
    ASSERT_GT(further, 0u) << "the example declares further distributions";
    // Every trial seed for the listed distributions; the drawn seed alone for the further ones.
    EXPECT_EQ(job.gate.size(), (job.calls.size() - further) * 3 + further);
    for (const auto& g : job.gate)
        if (job.calls[static_cast<std::size_t>(g.call)].shape.find('[') != std::string::npos) {
            EXPECT_EQ(g.seed, 3u);
        }
    for (const auto& c : job.calls) {
        const auto listed = c.shape.substr(0, c.shape.find('['));
        const auto* sh = example().find_shape(listed);
        ASSERT_NE(sh, nullptr) << c.shape;
        EXPECT_TRUE(sh->gate);
        EXPECT_EQ(c.dims, sh->dims);
        if (c.mode == "fwd") {
            ASSERT_EQ(c.inputs[0].name, "x");
            EXPECT_EQ(c.inputs[0].shape, (std::vector<std::int64_t>{sh->dims.at("N"), sh->dims.at("D")}));
            EXPECT_EQ(c.reference_entry, "rmsnorm_fwd_ref");
        }
    }
    std::set<std::uint64_t> seeds;
    for (const auto& g : job.gate) seeds.insert(g.seed);
    EXPECT_EQ(seeds, (std::set<std::uint64_t>{1, 2, 3}));
}

TEST(PlanBuilderTest, EachFurtherDistributionIsItsOwnNamedCall) {
    kloop::eval::evaluation_options o;
    o.held_out = 0;
    o.modes = {"fwd"};
    o.gate_k = "n256_d1024";
    const auto job = kloop::eval::build_gate_job(example(), o, {1, 2, 3});
    const auto& x = example().find_mode("fwd")->inputs[0];
    ASSERT_GE(x.adversarial.size(), 1u);
    ASSERT_EQ(job.calls.size(), 1 + x.adversarial.size());
    EXPECT_EQ(job.calls[0].shape, "n256_d1024");
    EXPECT_EQ(job.calls[0].inputs[0].init, x.init.text);
    for (std::size_t k = 0; k < x.adversarial.size(); ++k) {
        const auto& c = job.calls[1 + k];
        EXPECT_EQ(c.shape, "n256_d1024[x=" + x.adversarial[k].text + "]");
        EXPECT_EQ(c.inputs[0].init, x.adversarial[k].text) << "only x changes";
        EXPECT_EQ(c.inputs[1].init, job.calls[0].inputs[1].init);
        EXPECT_EQ(c.dims, job.calls[0].dims);
    }
}

TEST(PlanBuilderTest, HeldOutShapesComeFromTheDrawnSeedWithTheirOwnParams) {
    kloop::eval::evaluation_options o;
    o.held_out = 2;
    const auto job = kloop::eval::build_gate_job(example(), o, {1, 2, 3});
    const auto drawn = kloop::eval::held_out_calls(job);
    ASSERT_EQ(drawn.size(), 2u * example().modes.size());
    for (const auto& c : job.calls) {
        if (c.shape.rfind("heldout_", 0) != 0) continue;
        EXPECT_EQ(example().find_shape(c.shape), nullptr);
        for (const auto& listed : example().shapes) EXPECT_NE(c.dims, listed.dims);
        EXPECT_EQ(c.inputs[0].shape[1], c.dims.at("D"));
        if (c.mode == "fwd") {
            ASSERT_EQ(c.params.size(), 1u);
            EXPECT_NE(c.params[0].value, 1e-6) << "eps drawn from its domain";
        }
    }
    // A held-out call runs once, with the drawn seed (the last); a listed one with every seed.
    std::map<int, std::vector<std::uint64_t>> seeds_of;
    for (const auto& g : job.gate) seeds_of[g.call].push_back(g.seed);
    for (const auto& [call, seeds] : seeds_of) {
        const auto& shape = job.calls[static_cast<std::size_t>(call)].shape;
        if (shape.rfind("heldout_", 0) == 0) {
            EXPECT_EQ(seeds, std::vector<std::uint64_t>{3}) << shape;
        } else if (shape.find('[') == std::string::npos) {
            EXPECT_EQ(seeds, (std::vector<std::uint64_t>{1, 2, 3})) << shape;
        }
    }
    // Replayed by the same drawn seed, changed by another; the fixed seeds play no part.
    const auto again = kloop::eval::held_out_calls(kloop::eval::build_gate_job(example(), o, {5, 6, 3}));
    ASSERT_EQ(again.size(), drawn.size());
    for (std::size_t k = 0; k < drawn.size(); ++k) {
        EXPECT_EQ(again[k].dims, drawn[k].dims);
        ASSERT_EQ(again[k].params.size(), drawn[k].params.size());  // bwd has no params
        for (std::size_t p = 0; p < drawn[k].params.size(); ++p)
            EXPECT_EQ(again[k].params[p].value, drawn[k].params[p].value);
    }
    const auto other = kloop::eval::held_out_calls(kloop::eval::build_gate_job(example(), o, {1, 2, 4}));
    ASSERT_FALSE(other.empty());
    EXPECT_NE(other[0].dims, drawn[0].dims);
    o.held_out = 0;
    EXPECT_TRUE(kloop::eval::held_out_calls(kloop::eval::build_gate_job(example(), o, {1, 2, 3})).empty());
}

TEST(PlanBuilderTest, ModeAndGateKFilter) {
    kloop::eval::evaluation_options o;
    o.modes = {"bwd"};
    o.gate_k = "n256 and not heldout";
    const auto job = kloop::eval::build_gate_job(example(), o, {1, 2, 3});
    ASSERT_FALSE(job.calls.empty());
    EXPECT_EQ(job.calls[0].mode, "bwd");
    EXPECT_EQ(job.calls[0].shape, "n256_d1024");
    for (const auto& c : job.calls) EXPECT_EQ(c.shape.rfind("n256_d1024", 0), 0u) << c.shape;
}

TEST(PlanBuilderTest, BadModeOrEmptySelectionIsAUsageError) {
    kloop::eval::evaluation_options o;
    o.modes = {"fwdd"};
    EXPECT_THROW((void)kloop::eval::build_gate_job(example(), o, {1, 2, 3}), kloop::usage_error);
    o.modes = {};
    o.gate_k = "no_such_shape";
    EXPECT_THROW((void)kloop::eval::build_gate_job(example(), o, {1, 2, 3}), kloop::usage_error);
}

TEST(PlanBuilderTest, BenchOnlyBenchShapesAndJobRoundTripsThroughJson) {
    kloop::eval::evaluation_options o;
    o.check_every = 5;
    const auto job = kloop::eval::build_bench_job(example(), o, 42, 1 << 20);
    for (const auto& c : job.calls) EXPECT_TRUE(example().find_shape(c.shape)->bench);
    ASSERT_FALSE(job.bench.empty());
    const auto back = nlohmann::json(job).get<kloop::runner::job>();
    EXPECT_EQ(back.phase, kloop::runner::job_phase::bench);
    EXPECT_EQ(back.evict_bytes, 1u << 20);
    EXPECT_EQ(back.bench[0].input_sets, job.bench[0].input_sets);
    EXPECT_EQ(back.bench[0].flush_bytes, job.bench[0].flush_bytes);
    ASSERT_EQ(back.calls.size(), job.calls.size());
    EXPECT_EQ(back.calls[0].outputs[0].tol.atol, job.calls[0].outputs[0].tol.atol);
    EXPECT_EQ(back.calls[0].inputs[0].init, job.calls[0].inputs[0].init);
    EXPECT_EQ(back.bench[0].check_every, 5);
    EXPECT_EQ(back.bench[0].stop.min_samples, job.bench[0].stop.min_samples);
}

TEST(PlanBuilderTest, ShapeFilterKeepsOnlyTheNamedBenchShapesAndRefusesOthers) {
    std::vector<std::string> bench, gate_only;
    for (const auto& s : example().shapes) (s.bench ? bench : gate_only).push_back(s.name);
    ASSERT_GE(bench.size(), 2u);
    kloop::eval::evaluation_options o;
    o.bench_shapes = {bench.back()};
    const auto job = kloop::eval::build_bench_job(example(), o, 1, 0);
    ASSERT_EQ(job.calls.size(), example().modes.size());  // one shape, every mode
    for (const auto& c : job.calls) EXPECT_EQ(c.shape, bench.back());
    // The gate is the contract: the filter never narrows it.
    EXPECT_EQ(kloop::eval::build_gate_job(example(), o, {1, 2, 3}).calls.size(),
              kloop::eval::build_gate_job(example(), {}, {1, 2, 3}).calls.size());
    o.bench_shapes = {"no_such_shape"};
    try {
        (void)kloop::eval::build_bench_job(example(), o, 1, 0);
        ADD_FAILURE() << "an unknown shape must be refused";
    } catch (const kloop::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("--shape 'no_such_shape'"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(bench.front()), std::string::npos) << "the message lists the bench shapes";
    }
    if (!gate_only.empty()) {
        o.bench_shapes = {gate_only.front()};
        EXPECT_THROW((void)kloop::eval::build_bench_job(example(), o, 1, 0), kloop::usage_error);
    }
}

TEST(PlanBuilderTest, JobWithUnknownSchemaIsRefused) {
    nlohmann::json j = kloop::eval::build_bench_job(example(), {}, 1, 0);
    j["schema_version"] = 99;
    EXPECT_THROW((void)j.get<kloop::runner::job>(), std::runtime_error);
}

TEST(PlanBuilderTest, RotationCoversTheEvictionTargetBeforeFlushing) {
    // 10 MiB sets against 64 MiB: 8 sets, the other 7 cover 70 MiB, so no flush.
    auto r = kloop::eval::plan_rotation(10u << 20, 64u << 20, 0);
    EXPECT_EQ(r.input_sets, 8);
    EXPECT_EQ(r.flush_bytes, 0u);
    // Huge sets: never fewer than 2; the rotation already covers the target.
    r = kloop::eval::plan_rotation(600u << 20, 64u << 20, 0);
    EXPECT_EQ(r.input_sets, 2);
    EXPECT_EQ(r.flush_bytes, 0u);
    // Tiny sets: capped at 64 sets, the rest is flushed.
    r = kloop::eval::plan_rotation(1u << 10, 64u << 20, 0);
    EXPECT_EQ(r.input_sets, 64);
    EXPECT_EQ(r.flush_bytes, (64u << 20) - 63u * (1u << 10));
    // Memory budget limits the set count; the flush makes up the difference.
    r = kloop::eval::plan_rotation(100u << 20, 1000u << 20, 0, 400u << 20);
    EXPECT_EQ(r.input_sets, 4);
    EXPECT_EQ(r.flush_bytes, (1000u - 300u) << 20);
    // A forced set count is honoured.
    r = kloop::eval::plan_rotation(10u << 20, 64u << 20, 3);
    EXPECT_EQ(r.input_sets, 3);
    EXPECT_EQ(r.flush_bytes, (64u - 20u) << 20);
}
