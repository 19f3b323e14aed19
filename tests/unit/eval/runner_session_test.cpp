// Unit under test: eval/runner_session's find_inconsistency — the orchestrator refuses event
// streams that cannot be the record of one honest run (forged, replayed or appended lines).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/runner_session.hpp"
#include "unit/runner/event_lines.hpp"

using nlohmann::json;
using kloop::testing::typed;

namespace {

std::vector<kloop::runner::event> honest_gate() {
    return typed({kloop::testing::start_line({{"phase", "gate"}}),
                  json{{"event", "case_start"}, {"id", 0}},
                  json{{"event", "stage"}, {"id", 0}, {"stage", "candidate"}},
                  json{{"event", "case_result"}, {"id", 0}, {"return_code", 0}},
                  json{{"event", "case_start"}, {"id", 1}},
                  json{{"event", "case_result"}, {"id", 1}, {"return_code", 0}},
                  json{{"event", "done"}}});
}

kloop::runner::event line(const json& j) { return kloop::runner::event_from_json(j); }

}  // namespace

TEST(RunnerSessionTest, AnHonestStreamIsConsistent) {
    EXPECT_EQ(kloop::eval::find_inconsistency(honest_gate()), "");
    // A runner that failed to start a device writes only its fatal line.
    EXPECT_EQ(kloop::eval::find_inconsistency(typed({json{{"event", "fatal"}, {"message", "no device"}}})), "");
}

TEST(RunnerSessionTest, LinesAfterDoneAreRefused) {
    auto ev = honest_gate();
    ev.push_back(line({{"event", "case_result"}, {"id", 0}, {"return_code", 0}}));  // appended by a destructor
    EXPECT_NE(kloop::eval::find_inconsistency(ev).find("after the runner's \"done\""), std::string::npos);
}

TEST(RunnerSessionTest, ASecondResultForOneIdIsRefused) {
    auto ev = honest_gate();
    ev.insert(ev.begin() + 4, line({{"event", "case_result"}, {"id", 0}, {"return_code", 0}}));
    EXPECT_NE(kloop::eval::find_inconsistency(ev).find("a second case_result for id 0"), std::string::npos);
}

TEST(RunnerSessionTest, AResultThatNeverStartedIsRefused) {
    auto ev = honest_gate();
    ev.insert(ev.begin() + 1, line(kloop::testing::bench_result_line(9, {{"samples_s", {1e-9}}})));
    EXPECT_NE(kloop::eval::find_inconsistency(ev).find("never started"), std::string::npos);
}

TEST(RunnerSessionTest, ASecondStartOrAMissingStartIsRefused) {
    auto ev = honest_gate();
    ev.insert(ev.begin() + 2, line(kloop::testing::start_line({{"pid", 2}})));
    EXPECT_NE(kloop::eval::find_inconsistency(ev), "");
    auto headless = honest_gate();
    headless.erase(headless.begin());
    EXPECT_NE(kloop::eval::find_inconsistency(headless), "");
}

TEST(RunnerSessionTest, AResultWithoutAnIdIsRefused) {
    try {
        (void)line({{"event", "case_result"}, {"return_code", 0}});
        FAIL() << "a case_result without an id was read";
    } catch (const kloop::runner::event_error& e) {
        EXPECT_NE(std::string(e.what()).find("'id' is missing"), std::string::npos) << e.what();
    }
}

TEST(RunnerSessionTest, AnInconsistentSessionNamesItsFailure) {
    kloop::eval::runner_session s;
    s.finished = false;
    s.inconsistency = "a line after the runner's \"done\" (case_result)";
    EXPECT_EQ(s.describe_failure(), "the runner's records are inconsistent: a line after the runner's \"done\" (case_result)");
}
