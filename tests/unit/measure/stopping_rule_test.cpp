// Unit under test: measure/stopping_rule — minima, convergence, plateau, caps, and the vectors
// shared with the Python port.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "core/rng.hpp"
#include "measure/stopping_rule.hpp"

using namespace kloop::measure;

TEST(StoppingRuleTest, ConstantSamplesConvergeRightAfterMinSamples) {
    stopping_config c;  // min 10 samples, 0.5 s
    stopping_rule rule(c);
    for (int i = 0; i < 9; ++i) {
        rule.add(0.1);  // 0.9 s after 9: time is met, samples are not
        ASSERT_FALSE(rule.is_done()) << i;
    }
    rule.add(0.1);
    EXPECT_EQ(rule.get_state(), stop_reason::converged);
    EXPECT_EQ(rule.get_count(), 10u);
    EXPECT_NEAR(rule.get_total_time_s(), 1.0, 1e-12);
    EXPECT_EQ(rule.get_rel_stdev(), 0.0);
}

TEST(StoppingRuleTest, ConstantSamplesConvergeRightAfterMinTime) {
    stopping_config c;
    stopping_rule rule(c);
    const double s = 0.001;  // 0.5 s needs 500 samples
    int n = 0;
    while (!rule.is_done()) {
        rule.add(s);
        ++n;
        ASSERT_LE(n, 1000);
    }
    EXPECT_EQ(rule.get_state(), stop_reason::converged);
    EXPECT_GE(rule.get_total_time_s(), 0.5);
    EXPECT_LT(rule.get_total_time_s() - s, 0.5);  // one sample earlier was not enough
}

// The time budgets count measurement time: a 10 us GPU sample that took 1 ms of flush,
// synchronisation and clock reads counts 1 ms, so min_time 0.5 s needs 500 samples, not 50000.
TEST(StoppingRuleTest, TimeBudgetsCountEachSamplesCostNotOnlyTheSample) {
    stopping_config c;
    stopping_rule rule(c);
    int n = 0;
    while (!rule.is_done()) {
        rule.add(10e-6, 1e-3);
        ++n;
        ASSERT_LE(n, 1000);
    }
    EXPECT_EQ(rule.get_state(), stop_reason::converged);
    EXPECT_EQ(n, 500);
    EXPECT_NEAR(rule.get_total_time_s(), 0.5, 1e-9);
    // The cap too: 15 s of measurement time, whatever the samples sum to.
    c.target_rel_stdev = 0;
    c.plateau_max_drift = 0;
    stopping_rule capped(c);
    for (int i = 0; i < 20000 && !capped.is_done(); ++i) capped.add(i % 2 ? 10e-6 : 11e-6, 1e-3);
    EXPECT_EQ(capped.get_state(), stop_reason::time_cap);
    EXPECT_NEAR(capped.get_total_time_s(), 15.0, 1e-3);
    // A cost below the sample (or not finite) counts the sample itself.
    stopping_rule low(c);
    low.add(0.25, 0.1);
    low.add(0.25, std::nan(""));
    EXPECT_DOUBLE_EQ(low.get_total_time_s(), 0.5);
}

TEST(StoppingRuleTest, AlternatingNoisySamplesPlateauInsteadOfConverging) {
    stopping_config c;
    c.min_time_s = 0.0;
    stopping_rule rule(c);
    int n = 0;
    while (!rule.is_done() && n < 100000) {
        rule.add(n % 2 ? 2e-3 : 1e-3);
        ++n;
    }
    EXPECT_EQ(rule.get_state(), stop_reason::plateau);
    EXPECT_NEAR(rule.get_rel_stdev(), 1.0 / 3.0, 0.01);
    EXPECT_GT(n, static_cast<int>(c.plateau_window));
    EXPECT_LT(n, 1000);
}

TEST(StoppingRuleTest, RandomNoiseNeverConvergesButStops) {
    kloop::rng r(9);
    stopping_config c;
    stopping_rule rule(c);
    while (!rule.is_done()) rule.add(1e-4 * (1.0 + 0.03 * r.normal()));  // 3 % noise, target 0.5 %
    EXPECT_NE(rule.get_state(), stop_reason::converged);
    EXPECT_TRUE(rule.get_state() == stop_reason::plateau || rule.get_state() == stop_reason::time_cap ||
                rule.get_state() == stop_reason::sample_cap);
    EXPECT_NEAR(rule.get_rel_stdev(), 0.03, 0.005);
}

TEST(StoppingRuleTest, TimeCapIsHonouredEvenBeforeMinSamples) {
    stopping_config c;
    c.max_time_s = 1.0;
    stopping_rule rule(c);
    rule.add(0.6);
    EXPECT_FALSE(rule.is_done());
    rule.add(0.6);
    EXPECT_EQ(rule.get_state(), stop_reason::time_cap);
    EXPECT_EQ(rule.get_count(), 2u);
}

TEST(StoppingRuleTest, SampleCapIsHonoured) {
    stopping_config c;
    c.max_samples = 50;
    c.min_time_s = 0.0;
    c.plateau_max_drift = 0.0;  // plateau practically impossible
    stopping_rule rule(c);
    int n = 0;
    while (!rule.is_done()) {
        rule.add((n % 3 + 1) * 1e-3);  // rel stdev far above the target
        ++n;
    }
    EXPECT_EQ(rule.get_state(), stop_reason::sample_cap);
    EXPECT_EQ(n, 50);
}

TEST(StoppingRuleTest, SteadilyRisingNoiseIsNoPlateau) {
    // Spread that keeps growing (quadratically in n): rel stdev keeps rising, so only the time
    // cap (about 2000 samples of 1 ms) stops it.
    stopping_config c;
    c.min_time_s = 0.0;
    c.max_time_s = 2.0;
    c.target_rel_stdev = 0.0;  // the early, tiny spread would otherwise count as converged
    stopping_rule rule(c);
    int n = 0;
    while (!rule.is_done()) {
        const double spread = 0.9e-3 * (n / 2100.0) * (n / 2100.0);
        rule.add(1e-3 + (n % 2 ? spread : -spread));
        ++n;
    }
    EXPECT_EQ(rule.get_state(), stop_reason::time_cap);
}

TEST(StoppingRuleTest, ToStringAndValidation) {
    EXPECT_EQ(to_string(stop_reason::converged), "converged");
    EXPECT_EQ(to_string(stop_reason::time_cap), "time_cap");
    EXPECT_EQ(stop_reason_from_string("plateau"), stop_reason::plateau);
    EXPECT_THROW((void)stop_reason_from_string("done"), std::invalid_argument);
    stopping_rule rule{stopping_config{}};
    EXPECT_THROW(rule.add(-1.0), std::invalid_argument);
    EXPECT_THROW(rule.add(std::nan("")), std::invalid_argument);
    EXPECT_TRUE(std::isinf(rule.get_rel_stdev()));
    stopping_config bad;
    bad.plateau_window = 2;
    EXPECT_THROW(stopping_rule{bad}, std::invalid_argument);
}

// tests/data/stopping_rule_cases.json (tests/data/make_stopping_rule_cases.py): the Python port's
// stops, which this rule must reproduce — same count, same reason — with every setting the job
// carries, the plateau window and drift included.
TEST(StoppingRuleTest, SharedVectorsStopAsThePythonPortDoes) {
    std::ifstream in(std::string(KLOOP_TEST_SOURCE_DIR) + "/tests/data/stopping_rule_cases.json");
    ASSERT_TRUE(in) << "tests/data/stopping_rule_cases.json";
    const auto doc = nlohmann::json::parse(in);
    std::set<std::string> reasons;
    for (const auto& k : doc.at("cases")) {
        const auto& s = k.at("stop");
        stopping_config c;
        c.min_samples = s.at("min_samples").get<std::size_t>();
        c.min_time_s = s.at("min_time_s").get<double>();
        c.target_rel_stdev = s.at("target_rel_stdev").get<double>();
        c.max_time_s = s.at("max_time_s").get<double>();
        c.max_samples = s.at("max_samples").get<std::size_t>();
        c.plateau_window = s.at("plateau_window").get<std::size_t>();
        c.plateau_max_drift = s.at("plateau_max_drift").get<double>();
        stopping_rule r(c);
        std::size_t count = 0;
        for (const auto& pair : k.at("series")) {
            r.add(pair.at(0).get<double>(), pair.at(1).get<double>());
            ++count;
            if (r.is_done()) break;
        }
        const std::string why = k.at("why");
        EXPECT_EQ(count, k.at("expected").at("count").get<std::size_t>()) << why;
        EXPECT_EQ(to_string(r.get_state()), k.at("expected").at("reason").get<std::string>()) << why;
        reasons.insert(k.at("expected").at("reason").get<std::string>());
    }
    EXPECT_EQ(reasons, (std::set<std::string>{"converged", "plateau", "time_cap", "sample_cap", "not_done"}));
}
