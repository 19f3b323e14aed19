// Unit under test: loop/tune_search — the order of an exhaustive search, the budget, coordinate
// descent moving only on FASTER, red points and failed builds marked and passed, byte-identical
// builds skipped, the race of the best against the start, and an interruption keeping the points.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "loop/tune_search.hpp"

using namespace kloop::loop;

namespace {

// Two tunables: A in {1, 2, 3} (declared 1), B in {x, y} (declared x) — values as numbers below.
std::vector<tunable> two_tunables() {
    return parse_tunables("#define A 1 // kloop:tune 1 2 3\n#define B 10 // kloop:tune 10 20\n", "k.cpp");
}

// Speed is a score per configuration; a race says FASTER when the candidate's score beats the
// incumbent's by more than 5 %, SLOWER when it is 5 % below, SAME otherwise.
class fake_evaluator final : public tune_evaluator {
public:
    std::function<double(const tune_config&)> score = [](const tune_config&) { return 1.0; };
    std::map<tune_config, std::string> identity;        // default: the values joined
    std::vector<tune_config> red, unbuildable;
    std::vector<tune_config> built;
    std::vector<std::pair<tune_config, tune_config>> races;
    int interrupt_at_race = -1;

    std::size_t lane_count = 1;
    std::vector<std::size_t> build_lanes, race_lanes;
    std::size_t lanes() const override { return lane_count; }
    point_build build(const tune_config& c, std::size_t lane) override {
        built.push_back(c);
        build_lanes.push_back(lane);
        if (std::find(unbuildable.begin(), unbuildable.end(), c) != unbuildable.end()) return {false, "", "error: nope"};
        auto it = identity.find(c);
        return {true, it != identity.end() ? it->second : c[0] + "/" + c[1], ""};
    }
    race_outcome race(const tune_config& inc, const tune_config& cand, std::size_t lane) override {
        if (static_cast<int>(races.size()) == interrupt_at_race)
            throw kloop::error(kloop::exit_code::interrupted, "interrupted");
        races.emplace_back(inc, cand);
        race_lanes.push_back(lane);
        race_outcome r;
        if (std::find(red.begin(), red.end(), cand) != red.end()) {
            r.status = tune_point_status::red;
            r.reason = "gate red";
            return r;
        }
        const double s = score(cand) / score(inc);
        kloop::measure::ab_result v;
        v.speedup = s;
        v.ci_low = s * 0.98;
        v.ci_high = s * 1.02;
        v.verdict = s > 1.05 ? kloop::measure::ab_verdict::faster
                    : s < 0.95 ? kloop::measure::ab_verdict::slower : kloop::measure::ab_verdict::same;
        r.overall = v;
        r.status = v.verdict == kloop::measure::ab_verdict::faster ? tune_point_status::faster
                                                                    : tune_point_status::not_faster;
        r.device = "slot-" + std::to_string(lane);
        return r;
    }
};

// The same on real threads: every job of a batch started at once, and the most seen at once.
class threaded_evaluator final : public tune_evaluator {
public:
    explicit threaded_evaluator(std::size_t lanes) { inner.lane_count = lanes; }
    fake_evaluator inner;
    std::mutex mutex;
    std::atomic<int> running{0};
    int most_at_once = 0;
    std::size_t lanes() const override { return inner.lane_count; }
    std::atomic<int> batch{1};
    std::atomic<int> arrived{0};  // the batch's races that reached race(), never counted down
    void in_parallel(std::size_t n, const std::function<void(std::size_t)>& job) override {
        EXPECT_LE(n, inner.lane_count);
        batch = static_cast<int>(n);
        arrived = 0;
        std::vector<std::thread> threads;
        for (std::size_t i = 0; i < n; ++i) threads.emplace_back([&, i] { job(i); });
        for (auto& t : threads) t.join();
        batch = 1;
    }
    point_build build(const tune_config& c, std::size_t lane) override {
        const std::lock_guard<std::mutex> lock(mutex);
        return inner.build(c, lane);
    }
    race_outcome race(const tune_config& inc, const tune_config& cand, std::size_t lane) override {
        const int now = ++running;
        ++arrived;
        // A race of a batch waits (a bounded while) for the batch's other races: they run at once
        // only if they all get here before any returns.
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (arrived.load() < batch.load() && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        race_outcome r;
        {
            const std::lock_guard<std::mutex> lock(mutex);
            most_at_once = std::max(most_at_once, std::max(now, running.load()));
            r = inner.race(inc, cand, lane);
        }
        --running;
        return r;
    }
};

std::vector<std::string> labels(const tune_result& r) {
    std::vector<std::string> out;
    for (const auto& p : r.points) out.push_back(p.label);
    return out;
}

}  // namespace

TEST(TuneSearchTest, ExhaustiveVisitsEveryPointInOdometerOrderStartFirst) {
    const auto t = two_tunables();
    fake_evaluator f;
    std::vector<int> seen;
    const auto r = run_tune_search(t, {}, f, [&](const tune_point& p) { seen.push_back(p.index); });
    EXPECT_EQ(r.search, "exhaustive");
    EXPECT_EQ(r.space_size, 6u);
    EXPECT_EQ(labels(r), (std::vector<std::string>{"A=1, B=10", "A=1, B=20", "A=2, B=10", "A=2, B=20", "A=3, B=10",
                                                   "A=3, B=20"}));
    EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5}));
    EXPECT_EQ(r.points[0].status, tune_point_status::start);
    EXPECT_EQ(f.races.size(), 5u);  // every other point against the start (nothing was faster)
    EXPECT_EQ(r.best, r.start);
    EXPECT_FALSE(r.best_vs_start);
}

TEST(TuneSearchTest, OnlyAFasterRaceMovesTheIncumbent) {
    const auto t = two_tunables();
    fake_evaluator f;
    // A=2 is 3 % faster (SAME: no move), A=3,B=20 twice as fast.
    f.score = [](const tune_config& c) { return c == tune_config{"3", "20"} ? 2.0 : c[0] == "2" ? 1.03 : 1.0; };
    const auto r = run_tune_search(t, {}, f);
    EXPECT_EQ(r.best, (tune_config{"3", "20"}));
    for (const auto& p : r.points)
        if (p.index > 0) {
            EXPECT_EQ(p.incumbent, "A=1, B=10") << p.label;  // the last one is the first move
        }
    EXPECT_EQ(r.points.back().status, tune_point_status::faster);
    ASSERT_TRUE(r.best_vs_start);  // raced against the start itself: no extra race
    EXPECT_DOUBLE_EQ(r.best_vs_start->speedup, 2.0);
    EXPECT_EQ(f.races.size(), 5u);
}

TEST(TuneSearchTest, TheBestIsRacedAgainstTheStartWhenItBeatAnotherIncumbent) {
    const auto t = two_tunables();
    fake_evaluator f;
    f.score = [](const tune_config& c) { return c[1] == "20" ? (c[0] == "3" ? 3.0 : 1.5) : 1.0; };
    const auto r = run_tune_search(t, {}, f);
    EXPECT_EQ(r.best, (tune_config{"3", "20"}));
    EXPECT_EQ(r.points.back().incumbent, "A=1, B=20");
    ASSERT_FALSE(f.races.empty());
    EXPECT_EQ(f.races.back(), (std::pair<tune_config, tune_config>{{"1", "10"}, {"3", "20"}}));
    ASSERT_TRUE(r.best_vs_start);
    EXPECT_DOUBLE_EQ(r.best_vs_start->speedup, 3.0);
}

TEST(TuneSearchTest, TheBudgetCountsPointsAndALargerSpaceIsSearchedByCoordinates) {
    const auto t = two_tunables();
    fake_evaluator f;
    tune_search_options o;
    o.budget = 3;
    const auto r = run_tune_search(t, o, f);
    EXPECT_EQ(r.search, "coordinate");
    EXPECT_EQ(r.points.size(), 3u);
    EXPECT_NE(r.stop_reason.find("budget"), std::string::npos) << r.stop_reason;

    fake_evaluator g;
    o.kind = search_kind::exhaustive;
    const auto e = run_tune_search(t, o, g);
    EXPECT_EQ(e.search, "exhaustive");
    EXPECT_EQ(labels(e), (std::vector<std::string>{"A=1, B=10", "A=1, B=20", "A=2, B=10"}));
}

TEST(TuneSearchTest, CoordinateDescentMovesOnFasterAndStopsAfterARoundWithoutAMove) {
    const auto t = two_tunables();
    fake_evaluator f;
    // A=2 is better; with A=2, B=20 is better still; A=3 is worse.
    f.score = [](const tune_config& c) {
        double s = c[0] == "2" ? 1.5 : c[0] == "3" ? 0.8 : 1.0;
        return c[1] == "20" && c[0] == "2" ? s * 1.5 : s;
    };
    tune_search_options o;
    o.kind = search_kind::coordinate;
    const auto r = run_tune_search(t, o, f);
    EXPECT_EQ(r.best, (tune_config{"2", "20"}));
    // Round 1: A=2 (move), A=3 vs A=2, then B=20 with A=2 (move); round 2: A=1,B=20 and A=3,B=20
    // against A=2,B=20, nothing moves (A=2,B=10 was tried).
    EXPECT_EQ(labels(r), (std::vector<std::string>{"A=1, B=10", "A=2, B=10", "A=3, B=10", "A=2, B=20", "A=1, B=20",
                                                   "A=3, B=20"}));
    EXPECT_EQ(r.points[2].incumbent, "A=2, B=10");
    EXPECT_EQ(r.points[4].incumbent, "A=2, B=20");
    EXPECT_EQ(r.search, "coordinate");
    EXPECT_NE(r.stop_reason.find("round 2 moved nothing"), std::string::npos) << r.stop_reason;
    // A SAME or AMBIGUOUS point never moves it: with every score equal, the start stays.
    fake_evaluator flat;
    const auto s = run_tune_search(t, o, flat);
    EXPECT_EQ(s.best, s.start);
    EXPECT_EQ(s.points.size(), 4u);  // one round: A=2, A=3, B=20
}

TEST(TuneSearchTest, RedPointsAndFailedBuildsAreMarkedAndTheSearchGoesOn) {
    const auto t = two_tunables();
    fake_evaluator f;
    f.red = {{"2", "10"}};
    f.unbuildable = {{"1", "20"}};
    f.score = [](const tune_config& c) { return c == tune_config{"3", "10"} ? 2.0 : c == tune_config{"2", "10"} ? 9.0 : 1.0; };
    const auto r = run_tune_search(t, {}, f);
    ASSERT_EQ(r.points.size(), 6u);
    EXPECT_EQ(r.points[1].status, tune_point_status::build_failed);
    EXPECT_EQ(r.points[1].reason, "error: nope");
    EXPECT_EQ(r.points[2].status, tune_point_status::red);
    EXPECT_EQ(r.best, (tune_config{"3", "10"}));  // the red point's speed never counts
}

TEST(TuneSearchTest, AByteIdenticalBuildIsSkippedAndSaysWhichPointItDuplicates) {
    const auto t = two_tunables();
    fake_evaluator f;
    f.identity[{"1", "20"}] = "1/10";  // B is dead code at A=1
    f.identity[{"3", "20"}] = "2/20";
    const auto r = run_tune_search(t, {}, f);
    EXPECT_EQ(r.points[1].status, tune_point_status::duplicate);
    EXPECT_NE(r.points[1].reason.find("#0 (A=1, B=10)"), std::string::npos) << r.points[1].reason;
    EXPECT_EQ(r.points[5].status, tune_point_status::duplicate);
    EXPECT_NE(r.points[5].reason.find("#3 (A=2, B=20)"), std::string::npos) << r.points[5].reason;
    EXPECT_EQ(f.races.size(), 3u);
}

TEST(TuneSearchTest, AnInterruptionKeepsThePointsSoFar) {
    const auto t = two_tunables();
    fake_evaluator f;
    f.interrupt_at_race = 2;
    int recorded = 0;
    const auto r = run_tune_search(t, {}, f, [&](const tune_point&) { ++recorded; });
    EXPECT_TRUE(r.interrupted);
    EXPECT_EQ(r.points.size(), 3u);
    EXPECT_EQ(recorded, 3);
}

TEST(TuneSearchTest, AStartThatDoesNotBuildIsAnError) {
    const auto t = two_tunables();
    fake_evaluator f;
    f.unbuildable = {{"1", "10"}};
    EXPECT_THROW((void)run_tune_search(t, {}, f), kloop::build_error);
    EXPECT_THROW((void)run_tune_search({}, {}, f), kloop::usage_error);
}

TEST(TuneSearchTest, OneLaneIsTheSequentialSearchRaceForRace) {
    const auto t = two_tunables();
    fake_evaluator f;
    f.score = [](const tune_config& c) { return c[1] == "20" ? (c[0] == "3" ? 3.0 : 1.5) : 1.0; };
    const auto r = run_tune_search(t, {}, f);
    // Each point raced against the incumbent of its time: A=1,B=20 moved it, so the rest face it.
    EXPECT_EQ(r.points[1].incumbent, "A=1, B=10");
    EXPECT_EQ(r.points[2].incumbent, "A=1, B=20");
    EXPECT_EQ(f.race_lanes, std::vector<std::size_t>(f.race_lanes.size(), 0));
    EXPECT_TRUE(r.points[0].became_incumbent);
    EXPECT_TRUE(r.points[1].became_incumbent);
    EXPECT_TRUE(r.points[5].became_incumbent);
}

TEST(TuneSearchTest, TwoLanesRaceABatchAgainstOneIncumbentAtOnceAndMoveToItsFastest) {
    const auto t = two_tunables();
    threaded_evaluator e(2);
    // Batches of the exhaustive order: [A=1,B=20 | A=2,B=10], [A=2,B=20 | A=3,B=10], [A=3,B=20].
    // In the first both are FASTER than the start; A=2,B=10 by more.
    e.inner.score = [](const tune_config& c) {
        if (c == tune_config{"1", "20"}) return 1.2;
        if (c == tune_config{"2", "10"}) return 1.5;
        if (c == tune_config{"3", "20"}) return 2.0;
        return 1.0;
    };
    const auto r = run_tune_search(t, {}, e);
    EXPECT_EQ(e.most_at_once, 2);
    ASSERT_EQ(r.points.size(), 6u);
    EXPECT_EQ(labels(r), (std::vector<std::string>{"A=1, B=10", "A=1, B=20", "A=2, B=10", "A=2, B=20", "A=3, B=10",
                                                   "A=3, B=20"}));
    // Batch 1: both against the start; the faster one is the incumbent, the other says why not.
    EXPECT_EQ(r.points[1].incumbent, "A=1, B=10");
    EXPECT_EQ(r.points[2].incumbent, "A=1, B=10");
    EXPECT_EQ(r.points[1].status, tune_point_status::faster);
    EXPECT_FALSE(r.points[1].became_incumbent);
    EXPECT_NE(r.points[1].reason.find("#2 (A=2, B=10) of the same batch was faster still (1.500x against 1.200x)"),
              std::string::npos) << r.points[1].reason;
    EXPECT_TRUE(r.points[2].became_incumbent);
    // Batch 2 faces A=2,B=10; batch 3 (one point left) too, and wins.
    EXPECT_EQ(r.points[3].incumbent, "A=2, B=10");
    EXPECT_EQ(r.points[4].incumbent, "A=2, B=10");
    EXPECT_EQ(r.points[5].incumbent, "A=2, B=10");
    EXPECT_EQ(r.best, (tune_config{"3", "20"}));
    // Lane i holds the batch's i-th point, for its build and its race; the device is the race's.
    EXPECT_EQ(r.points[1].device, "slot-0");
    EXPECT_EQ(r.points[2].device, "slot-1");
    // The best faced A=2,B=10, not the start: one more race measures it against the start, on lane 0.
    ASSERT_TRUE(r.best_vs_start);
    EXPECT_DOUBLE_EQ(r.best_vs_start->speedup, 2.0);
    EXPECT_EQ(e.inner.races.back(), (std::pair<tune_config, tune_config>{{"1", "10"}, {"3", "20"}}));
}

TEST(TuneSearchTest, ABatchStopsAtTheBudgetAndMarksDuplicatesInBatchOrder) {
    const auto t = two_tunables();
    fake_evaluator f;
    f.lane_count = 4;
    f.identity[{"2", "10"}] = "1/20";  // the same build as the batch's first point
    tune_search_options o;
    o.kind = search_kind::exhaustive;
    o.budget = 4;
    const auto r = run_tune_search(t, o, f);
    ASSERT_EQ(r.points.size(), 4u);  // the start and a batch of three: the budget, not the lanes
    EXPECT_NE(r.stop_reason.find("budget"), std::string::npos) << r.stop_reason;
    EXPECT_EQ(r.points[2].status, tune_point_status::duplicate);
    EXPECT_NE(r.points[2].reason.find("#1 (A=1, B=20)"), std::string::npos) << r.points[2].reason;
    EXPECT_EQ(f.races.size(), 2u);
    EXPECT_EQ(f.build_lanes, (std::vector<std::size_t>{0, 0, 1, 2}));  // the start, then lanes 0..2
    EXPECT_EQ(f.race_lanes, (std::vector<std::size_t>{0, 2}));
}

TEST(TuneSearchTest, CoordinateDescentRacesATunablesValuesAsOneBatch) {
    const auto t = two_tunables();
    threaded_evaluator e(3);
    e.inner.score = [](const tune_config& c) { return c[0] == "3" ? 2.0 : c[0] == "2" ? 1.5 : 1.0; };
    tune_search_options o;
    o.kind = search_kind::coordinate;
    const auto r = run_tune_search(t, o, e);
    EXPECT_EQ(e.most_at_once, 2);  // A=2 and A=3 at once
    EXPECT_EQ(r.points[1].incumbent, "A=1, B=10");
    EXPECT_EQ(r.points[2].incumbent, "A=1, B=10");
    EXPECT_EQ(r.best[0], "3");
    EXPECT_TRUE(r.points[2].became_incumbent);
    EXPECT_FALSE(r.points[1].became_incumbent);
}
