// Unit under test: blackbox/pytest_summary — finding and parsing pytest's final summary line
// in real-looking outputs (-q and default verbosity, colours, warnings, failures, plugins).
#include <gtest/gtest.h>

#include "backend/blackbox/pytest_summary.hpp"

using kloop::backend::blackbox::describe_pytest_exit;
using kloop::backend::blackbox::parse_pytest_output;
using kloop::backend::blackbox::parse_summary_line;
using kloop::backend::blackbox::strip_ansi;

namespace {

TEST(PytestSummaryTest, QuietAllPassed) {
    const auto s = parse_pytest_output("............                                                             [100%]\n"
                                       "12 passed in 0.34s\n");
    ASSERT_TRUE(s.found);
    EXPECT_EQ(s.passed, 12);
    EXPECT_EQ(s.failed, 0);
    EXPECT_EQ(s.line, "12 passed in 0.34s");
    ASSERT_TRUE(s.duration_s);
    EXPECT_DOUBLE_EQ(*s.duration_s, 0.34);
    EXPECT_EQ(s.describe(), "12 passed");
}

TEST(PytestSummaryTest, DefaultVerbosityWithBorders) {
    const auto s = parse_pytest_output(
        "============================= test session starts ==============================\n"
        "platform linux -- Python 3.11.2, pytest-7.2.1, pluggy-1.0.0+repack\n"
        "rootdir: /tmp/repo\n"
        "collected 13 items\n\n"
        "tests/test_op.py ............s                                          [100%]\n\n"
        "======================== 12 passed, 1 skipped in 0.28s =========================\n");
    ASSERT_TRUE(s.found);
    EXPECT_EQ(s.passed, 12);
    EXPECT_EQ(s.skipped, 1);
    EXPECT_EQ(s.line, "12 passed, 1 skipped in 0.28s");
}

TEST(PytestSummaryTest, OneLineWithBordersAndNoSpaces) {
    const auto s = parse_summary_line("= 3 passed, 1 skipped in 0.12s =");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->passed, 3);
    EXPECT_EQ(s->skipped, 1);
}

TEST(PytestSummaryTest, FailedAndPassedWithShortSummaryInfo) {
    const auto s = parse_pytest_output(
        ".F.F........                                                             [100%]\n"
        "=================================== FAILURES ===================================\n"
        "_______________________ test_softplus[0-n3_d7] ________________________\n"
        "E   AssertionError: Not equal to tolerance rtol=1e-05, atol=1e-06\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_op.py::test_softplus[0-n3_d7] - AssertionError: Not equal to tolerance rtol=1e-05, atol=1e-06\n"
        "FAILED tests/test_op.py::test_softplus[1-n64_d256] - AssertionError: non-finite output\n"
        "2 failed, 10 passed in 0.51s\n");
    ASSERT_TRUE(s.found);
    EXPECT_EQ(s.failed, 2);
    EXPECT_EQ(s.passed, 10);
    ASSERT_EQ(s.failures.size(), 2u);
    EXPECT_EQ(s.failures[0].kind, "FAILED");
    EXPECT_EQ(s.failures[0].node_id, "tests/test_op.py::test_softplus[0-n3_d7]");
    EXPECT_EQ(s.failures[0].message, "AssertionError: Not equal to tolerance rtol=1e-05, atol=1e-06");
    EXPECT_EQ(s.failures[1].message, "AssertionError: non-finite output");
    EXPECT_EQ(s.failures_total, 2);
    EXPECT_EQ(s.describe(), "2 failed, 10 passed");
}

TEST(PytestSummaryTest, OrderFailedFirstAsPytestPrintsIt) {
    const auto s = parse_summary_line("1 failed, 2 passed in 0.05s");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->failed, 1);
    EXPECT_EQ(s->passed, 2);
}

TEST(PytestSummaryTest, NoTestsRan) {
    const auto s = parse_pytest_output("\nno tests ran in 0.00s\n");
    ASSERT_TRUE(s.found);
    EXPECT_TRUE(s.no_tests_ran);
    EXPECT_EQ(s.passed, 0);
    EXPECT_EQ(s.describe(), "no tests ran");
    const auto b = parse_pytest_output("============================ no tests ran in 0.01s =============================\n");
    EXPECT_TRUE(b.found && b.no_tests_ran);
}

TEST(PytestSummaryTest, EverythingDeselected) {
    const auto s = parse_pytest_output("\n12 deselected in 0.19s\n");
    ASSERT_TRUE(s.found);
    EXPECT_EQ(s.deselected, 12);
    EXPECT_EQ(s.passed, 0);
}

TEST(PytestSummaryTest, WarningsSingularAndPlural) {
    auto s = parse_summary_line("==== 2 passed, 3 warnings in 1.20s ====");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->warnings, 3);
    s = parse_summary_line("1 passed, 1 warning in 0.01s");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->warnings, 1);
    EXPECT_EQ(s->describe(), "1 passed, 1 warning");
}

TEST(PytestSummaryTest, ErrorsSingularAndPluralAndCollectionErrors) {
    const auto s = parse_pytest_output(
        "==================================== ERRORS ====================================\n"
        "______________________ ERROR collecting tests/test_op.py _______________________\n"
        "ImportError while importing test module '/tmp/repo/tests/test_op.py'.\n"
        "=========================== short test summary info ============================\n"
        "ERROR tests/test_op.py\n"
        "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!\n"
        "=============================== 1 error in 0.12s ===============================\n");
    ASSERT_TRUE(s.found);
    EXPECT_EQ(s.errors, 1);
    ASSERT_EQ(s.failures.size(), 1u);
    EXPECT_EQ(s.failures[0].kind, "ERROR");
    EXPECT_EQ(s.failures[0].node_id, "tests/test_op.py");
    EXPECT_EQ(s.failures[0].message, "");
    const auto two = parse_summary_line("1 failed, 3 passed, 2 errors in 2.00s");
    ASSERT_TRUE(two);
    EXPECT_EQ(two->errors, 2);
}

TEST(PytestSummaryTest, XfailXpassAndRerunAndPluginWords) {
    const auto s = parse_summary_line("= 5 passed, 1 xfailed, 2 xpassed, 1 rerun, 3 flaky in 3.1s =");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->xfailed, 1);
    EXPECT_EQ(s->xpassed, 2);
    EXPECT_EQ(s->rerun, 1);
    EXPECT_EQ(s->other.at("flaky"), 3);
}

TEST(PytestSummaryTest, ColourCodesStripped) {
    const std::string coloured =
        "\x1b[32m============================== \x1b[32m\x1b[1m12 passed\x1b[0m\x1b[32m in 0.42s\x1b[0m\x1b[32m "
        "==============================\x1b[0m\n";
    const auto s = parse_pytest_output(coloured);
    ASSERT_TRUE(s.found);
    EXPECT_EQ(s.passed, 12);
    EXPECT_EQ(s.line, "12 passed in 0.42s");
    const auto red = parse_pytest_output("\x1b[31mFAILED\x1b[0m tests/t.py::x - assert 1 == 2\n"
                                         "\x1b[31m\x1b[1m1 failed\x1b[0m, \x1b[32m1 passed\x1b[0m\x1b[31m in 0.1s\x1b[0m\n");
    ASSERT_TRUE(red.found);
    EXPECT_EQ(red.failed, 1);
    ASSERT_EQ(red.failures.size(), 1u);
    EXPECT_EQ(red.failures[0].node_id, "tests/t.py::x");
}

TEST(PytestSummaryTest, StripAnsiLeavesPlainTextAlone) {
    EXPECT_EQ(strip_ansi("plain [100%]"), "plain [100%]");
    EXPECT_EQ(strip_ansi("\x1b[1;31mred\x1b[0m!"), "red!");
    EXPECT_EQ(strip_ansi("a\x1b(Bb"), "ab");
}

TEST(PytestSummaryTest, LongDurationsAndOldPytestSeconds) {
    auto s = parse_summary_line("=== 400 passed in 125.31s (0:02:05) ===");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->passed, 400);
    EXPECT_DOUBLE_EQ(*s->duration_s, 125.31);
    s = parse_summary_line("===== 2 passed in 0.50 seconds =====");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->passed, 2);
}

TEST(PytestSummaryTest, CrLfLineEndings) {
    const auto s = parse_pytest_output("..\r\n2 passed in 0.01s\r\n");
    ASSERT_TRUE(s.found);
    EXPECT_EQ(s.passed, 2);
}

TEST(PytestSummaryTest, QuietQuietPrintsNoSummary) {
    const auto s = parse_pytest_output("............                                                             [100%]\n");
    EXPECT_FALSE(s.found);
    EXPECT_EQ(s.describe(), "no pytest summary line");
}

TEST(PytestSummaryTest, NotSummaryLines) {
    for (const char* line : {"collected 12 items", "tests/test_op.py ....  [100%]", "12 passed", "in 0.1s",
                             "the answer is 42 in 3s", "passed in 0.1s", "= test session starts =",
                             "ERROR: file or directory not found: tests/x.py", "3 passed, in 0.1s"})
        EXPECT_FALSE(parse_summary_line(line)) << line;
}

TEST(PytestSummaryTest, TheLastSummaryLineWins) {
    // A candidate that prints a fake summary inside a test's captured output sits above pytest's own.
    const auto s = parse_pytest_output(
        "----------------------------- Captured stdout call -----------------------------\n"
        "============ 99 passed in 0.01s ============\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/test_op.py::test_a - assert False\n"
        "1 failed, 1 passed in 0.20s\n");
    ASSERT_TRUE(s.found);
    EXPECT_EQ(s.passed, 1);
    EXPECT_EQ(s.failed, 1);
}

TEST(PytestSummaryTest, FailureLinesAfterTheSummaryAreIgnored) {
    const auto s = parse_pytest_output("1 passed in 0.1s\nFAILED something printed later\n");
    EXPECT_TRUE(s.failures.empty());
}

TEST(PytestSummaryTest, ManyFailuresAreCappedButCounted) {
    std::string out;
    for (int i = 0; i < 70; ++i) out += "FAILED tests/t.py::test_" + std::to_string(i) + " - boom\n";
    out += "70 failed in 1.0s\n";
    const auto s = parse_pytest_output(out);
    EXPECT_EQ(s.failed, 70);
    EXPECT_EQ(s.failures.size(), kloop::backend::blackbox::max_reported_failures);
    EXPECT_EQ(s.failures_total, 70);
}

TEST(PytestSummaryTest, ExitCodesAreDescribed) {
    EXPECT_EQ(describe_pytest_exit(5), "exit 5 (no tests collected)");
    EXPECT_EQ(describe_pytest_exit(1), "exit 1 (tests failed)");
    EXPECT_EQ(describe_pytest_exit(42), "exit 42");
}

}  // namespace
