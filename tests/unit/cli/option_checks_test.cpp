// Unit under test: cli/option_checks — seeds and time limits are refused (exit 2, naming the
// option) instead of being turned into other values; and the verbs use those checks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/option_checks.hpp"
#include "cli_run.hpp"

using kloop::cli::parse_seed;
using kloop::cli::seconds_option;

namespace {

using kloop::testing::cli_result;

cli_result run(std::vector<std::string> args) { return kloop::testing::run_cli(std::move(args)); }

std::string check(const CLI::Validator& v, std::string text) { return v(text); }

}  // namespace

TEST(OptionChecksTest, SeedsAreDecimalUnsigned64BitIntegers) {
    EXPECT_EQ(parse_seed("0"), 0u);
    EXPECT_EQ(parse_seed("7440639937609716914"), 7440639937609716914ull);
    EXPECT_EQ(parse_seed("18446744073709551615"), 18446744073709551615ull);
    for (const char* bad : {"-1", "18446744073709551616", "", "0x10", "+5", " 5", "5 ", "1e3", "12abc"})
        EXPECT_THROW((void)parse_seed(bad), CLI::ValidationError) << "'" << bad << "'";
}

TEST(OptionChecksTest, SecondsAreFiniteAndBounded) {
    const auto positive = seconds_option();
    const auto non_negative = seconds_option(true);
    EXPECT_EQ(check(positive, "120"), "");
    EXPECT_EQ(check(positive, "0.25"), "");
    EXPECT_EQ(check(positive, "1000000"), "");
    for (const char* bad : {"0", "-1", "1e10", "1000001", "inf", "nan", "", "12s"})
        EXPECT_NE(check(positive, bad), "") << "'" << bad << "'";
    EXPECT_EQ(check(non_negative, "0"), "");
    EXPECT_NE(check(non_negative, "-0.5"), "");
}

TEST(OptionChecksTest, VerbsRefuseBadSeedsAndTimesNamingTheOption) {
    const std::vector<std::string> verify = {"verify", "op-dir", "--candidate", "c.cpp"};
    for (const auto& [option, value] : std::vector<std::pair<std::string, std::string>>{
             {"--seed", "-1"},
             {"--seed", "18446744073709551616"},
             {"--seed", ""},
             {"--timeout", "1e10"},
             {"--compile-timeout", "0"},
             {"--max-time", "inf"},
             {"--max-output-mib", "0"}}) {
        auto args = verify;
        args.push_back(option);
        args.push_back(value);
        const auto r = run(args);
        EXPECT_EQ(r.code, 2) << option << " " << value;
        EXPECT_NE(r.err.find(option), std::string::npos) << option << " '" << value << "': " << r.err;
    }
    const auto compare = run({"compare", "op-dir", "--candidate", "c.cpp", "--base", "b.cpp", "--seed", "-1"});
    EXPECT_EQ(compare.code, 2);
    EXPECT_NE(compare.err.find("--seed"), std::string::npos) << compare.err;
    const auto iterate = run({"iterate", "--proposal", "p.md", "--timeout", "1e10"});
    EXPECT_EQ(iterate.code, 2);
    EXPECT_NE(iterate.err.find("--timeout"), std::string::npos) << iterate.err;
}

TEST(OptionChecksTest, NumbersAreFinite) {
    const auto positive = kloop::cli::positive_number();
    EXPECT_EQ(check(positive, "0.005"), "");
    EXPECT_EQ(check(positive, "3"), "");
    for (const char* bad : {"0", "-1", "nan", "NaN", "inf", "-inf", "", "1x"})
        EXPECT_NE(check(positive, bad), "") << "'" << bad << "'";
    const auto fraction = kloop::cli::number_in(0.0, 0.99);
    EXPECT_EQ(check(fraction, "0"), "");
    EXPECT_EQ(check(fraction, "0.99"), "");
    for (const char* bad : {"1", "-0.1", "nan", "inf", ""}) EXPECT_NE(check(fraction, bad), "") << "'" << bad << "'";
}

// A NaN that reached a workspace record made every later report fail: refused while parsing.
TEST(OptionChecksTest, VerbsRefuseNonFiniteNumbersNamingTheOption) {
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"iterate", "--proposal", "p.md", "--min-effect", "nan"},
             {"iterate", "--proposal", "p.md", "--target-rsd", "nan"},
             {"init", "op-dir", "--candidate", "c.cpp", "--max-iterations", "3", "--target-rsd", "inf"},
             {"verify", "op-dir", "--candidate", "c.cpp", "--target-rsd", "nan"},
             {"compare", "op-dir", "--candidate", "c.cpp", "--base", "b.cpp", "--min-effect", "nan"},
             {"compare", "op-dir", "--candidate", "c.cpp", "--base", "b.cpp", "--target-rsd", "nan"}}) {
        const auto r = run(args);
        EXPECT_EQ(r.code, 2) << args[0] << " " << args[args.size() - 2];
        EXPECT_NE(r.err.find(args[args.size() - 2]), std::string::npos) << r.err;
    }
}
