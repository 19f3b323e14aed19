// Unit under test: measure/early_verdict — the look schedule, the per-look z, and the verdict
// the samples settle, on the vectors tests/data/early_verdict_cases.json shares with the Python
// worker's port (python/tests/test_early_verdict.py), so both runners stop a shape alike.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "measure/early_verdict.hpp"

namespace km = kloop::measure;

namespace {

km::early_verdict_config enabled() {
    km::early_verdict_config c;
    c.enabled = true;
    return c;
}

}  // namespace

TEST(EarlyVerdictTest, LooksAtPowersOfTwoFromTheFirstLook) {
    const auto c = enabled();
    for (std::size_t n : {64u, 128u, 256u, 1024u, 65536u}) EXPECT_TRUE(km::is_early_verdict_look(n, c)) << n;
    for (std::size_t n : {0u, 1u, 32u, 63u, 65u, 96u, 192u, 1000u}) EXPECT_FALSE(km::is_early_verdict_look(n, c)) << n;
}

TEST(EarlyVerdictTest, EachLookSpendsItsShareOfTheError) {
    // (1 - 0.95) / 12 looks / 2 sides = 0.00208 two-sided per median: z = Phi^-1(1 - 0.00104)
    EXPECT_NEAR(km::early_verdict_z(enabled()), 3.0781, 1e-3);
    auto one_look = enabled();
    one_look.max_looks = 1;
    EXPECT_NEAR(km::early_verdict_z(one_look), 2.2414, 1e-3);  // Phi^-1(1 - 0.0125)
}

TEST(EarlyVerdictTest, OffSettlesNothing) {
    const std::vector<double> slow(64, 2e-3), fast(64, 1e-3);
    EXPECT_FALSE(km::settled_verdict(slow, fast, km::early_verdict_config{}).has_value());
    EXPECT_EQ(km::settled_verdict(slow, fast, enabled()), km::ab_verdict::faster);
}

TEST(EarlyVerdictTest, SharedVectorsSettleAsThePythonPortDoes) {
    std::ifstream in(std::string(KLOOP_TEST_SOURCE_DIR) + "/tests/data/early_verdict_cases.json");
    ASSERT_TRUE(in) << "tests/data/early_verdict_cases.json";
    const auto doc = nlohmann::json::parse(in);
    auto c = enabled();
    c.min_effect = doc.at("config").at("min_effect").get<double>();
    c.confidence = doc.at("config").at("confidence").get<double>();
    c.first_look = doc.at("config").at("first_look").get<int>();
    c.max_looks = doc.at("config").at("max_looks").get<int>();
    int settled = 0, unsettled = 0;
    for (const auto& k : doc.at("cases")) {
        const auto base = k.at("base").get<std::vector<double>>();
        const auto cand = k.at("cand").get<std::vector<double>>();
        const auto got = km::settled_verdict(base, cand, c);
        const auto& want = k.at("expected");
        if (want.is_null()) {
            ++unsettled;
            EXPECT_FALSE(got.has_value()) << k.at("why") << ": settled " << km::to_string(*got);
        } else {
            ++settled;
            ASSERT_TRUE(got.has_value()) << k.at("why");
            EXPECT_EQ(km::to_string(*got), want.get<std::string>()) << k.at("why");
        }
    }
    EXPECT_GE(settled, 4);  // the file covers both outcomes
    EXPECT_GE(unsettled, 3);
}
