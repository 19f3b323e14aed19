// Unit under test: cli/timing_options — the stopping rule, --check-every and --min-effect parse
// real argv into the config the verbs run with, and every verb that takes an option validates it
// the same way (one declaration: `--min-effect 5` is refused by every verb that takes it).
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/timing_options.hpp"
#include "cli_run.hpp"

using kloop::cli::timed_sides;

namespace {

using kloop::testing::cli_result;

void parse(CLI::App& app, std::vector<std::string> args) {
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.parse(args);
}

cli_result run(std::vector<std::string> args) { return kloop::testing::run_cli(std::move(args)); }

}  // namespace

TEST(TimingOptionsTest, ArgvReachesTheConfig) {
    for (const auto sides : {timed_sides::one, timed_sides::two}) {
        CLI::App app;
        kloop::eval::evaluation_options o;
        kloop::measure::ab_config ab;
        kloop::cli::add_stopping_rule_options(app, o.stop, sides);
        kloop::cli::add_check_every_option(app, o.check_every, sides);
        kloop::cli::add_min_effect_options(app, ab);
        ASSERT_TRUE(ab.early_verdict);
        parse(app, {"--min-samples", "7", "--min-time", "0.1", "--max-time", "2.5", "--target-rsd", "0.01", "--check-every",
                    "0", "--min-effect", "0.05", "--no-early-verdict"});
        EXPECT_EQ(o.stop.min_samples, 7u);
        EXPECT_DOUBLE_EQ(o.stop.min_time_s, 0.1);
        EXPECT_DOUBLE_EQ(o.stop.max_time_s, 2.5);
        EXPECT_DOUBLE_EQ(o.stop.target_rel_stdev, 0.01);
        EXPECT_EQ(o.check_every, 0);
        EXPECT_DOUBLE_EQ(ab.min_effect, 0.05);
        EXPECT_FALSE(ab.early_verdict);
    }
}

TEST(TimingOptionsTest, BadValuesAreRefusedNamingTheOption) {
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"--min-samples", "0"}, {"--min-time", "-1"}, {"--max-time", "0"}, {"--target-rsd", "0"},
        {"--check-every", "-2"}, {"--min-effect", "5"}, {"--min-effect", "-0.1"}};
    for (const auto& [name, value] : bad) {
        CLI::App app;
        kloop::eval::evaluation_options o;
        kloop::measure::ab_config ab;
        kloop::cli::add_stopping_rule_options(app, o.stop, timed_sides::one);
        kloop::cli::add_check_every_option(app, o.check_every, timed_sides::one);
        kloop::cli::add_min_effect_options(app, ab);
        try {
            parse(app, {name, value});
            ADD_FAILURE() << name << " " << value << " was accepted";
        } catch (const CLI::ParseError& e) {
            EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
        }
    }
}

TEST(TimingOptionsTest, EveryVerbThatTakesMinEffectRefusesTheSameValue) {
    for (std::vector<std::string> verb : std::vector<std::vector<std::string>>{
             {"compare", "op", "--candidate", "a.cpp", "--base", "b.cpp"},
             {"noise", "op", "--candidate", "a.cpp"},
             {"iterate", "--proposal", "p.md"},
             {"report"}}) {
        const std::string name = verb.front();
        verb.insert(verb.end(), {"--min-effect", "5"});
        const auto r = run(verb);
        EXPECT_EQ(r.code, 2) << name << ": " << r.err;
        EXPECT_NE(r.err.find("--min-effect"), std::string::npos) << name << ": " << r.err;
    }
}
