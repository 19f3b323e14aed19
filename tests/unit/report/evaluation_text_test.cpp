// Unit tests of report/evaluation_text: the gate's candidate-time line.
#include "report/evaluation_text.hpp"

#include <gtest/gtest.h>

namespace {

kloop::eval::case_report timed_case(const char* mode, const char* shape, int trial, double call_s, double candidate_s) {
    kloop::eval::case_report c;
    c.mode = mode;
    c.shape = shape;
    c.trial = trial;
    c.pass = true;
    c.call_s = call_s;
    c.candidate_s = candidate_s;
    return c;
}

TEST(EvaluationTextTest, NamesTheSlowestCaseWhenOneTookASecond) {
    kloop::eval::gate_report g;
    g.cases = {timed_case("fwd", "B1_T63", 0, 0.2, 0.5), timed_case("fwd", "heldout_1", 2, 30.0, 31.0),
               timed_case("bwd", "B1_T63", 0, 0.1, 0.3)};
    const auto line = kloop::report::slowest_case_line(g);
    EXPECT_NE(line.find("31.8 s over 3 cases"), std::string::npos) << line;
    EXPECT_NE(line.find("slowest fwd/heldout_1 trial 2: 31.0 s (its checked call 30.0 s)"), std::string::npos) << line;
}

TEST(EvaluationTextTest, SaysNothingOfFastCasesUnlessTheRunnerFailed) {
    kloop::eval::gate_report g;
    g.cases = {timed_case("fwd", "a", 0, 0.01, 0.02), timed_case("fwd", "b", 1, 0.01, 0.5)};
    EXPECT_EQ(kloop::report::slowest_case_line(g), "");
    g.runner_failure = "timed out after 120.0 s";
    EXPECT_NE(kloop::report::slowest_case_line(g).find("slowest fwd/b trial 1: 0.5 s"), std::string::npos);
    EXPECT_EQ(kloop::report::slowest_case_line(kloop::eval::gate_report{}), "");
}

}  // namespace
