// Unit under test: blackbox/blackbox_evaluation — the gate's verdict from exit status and pytest
// summary, the bench's JSON, the evaluation record, the A/B; with a fake command runner (the
// seam of platform/subprocess) standing in for pytest and the bench script.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "backend/blackbox/blackbox_evaluation.hpp"
#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "report/evaluation_json.hpp"
#include "report/evaluation_text.hpp"
#include "spec/spec_loader.hpp"

namespace fs = std::filesystem;
using namespace kloop;
using kloop::platform::read_file;
using kloop::platform::scoped_temp_dir;
using kloop::platform::write_file_atomic;

namespace {

struct scripted {
    int exit_code = 0;
    std::string out;
    std::string err;
    int signal = 0;
    bool timed_out = false;
    double wall_s = 0.25;  // what the process "took"
};

// Answers git with "not a repository", `python --version`, and the gate / bench via callbacks.
class fake_runner final : public platform::command_runner_base {
public:
    std::function<scripted(const platform::process_request&)> gate;
    std::function<scripted(const platform::process_request&)> bench;
    std::vector<platform::process_request> seen;

protected:
    platform::process_result do_run(const platform::process_request& r) override {
        platform::process_result res;
        res.started = true;
        res.exit_code = 0;
        const auto has = [&](const std::string& w) { return std::find(r.argv.begin(), r.argv.end(), w) != r.argv.end(); };
        if (!r.argv.empty() && r.argv[0] == "git") {
            res.exit_code = 128;
            return res;
        }
        seen.push_back(r);
        if (has("--version")) {
            res.stdout_text = "Python 3.11.2\n";
            return res;
        }
        scripted s;
        if (has("pytest")) s = gate(r);
        else if (has("bench.py")) s = bench(r);
        res.exit_code = s.exit_code;
        res.term_signal = s.signal;
        res.timed_out = s.timed_out;
        res.timeout_s = r.timeout_s;
        res.wall_s = s.wall_s;
        if (s.signal) res.exit_code = -1;
        if (!r.stdout_file.empty()) write_file_atomic(r.stdout_file, s.out);
        if (!r.stderr_file.empty()) write_file_atomic(r.stderr_file, s.err);
        return res;
    }
};

const char* spec_text = R"([op]
name = "softplus"
mode = "blackbox"
frozen = ["tests/test_op.py"]

[repo]
target = "ops/kernel.py"

[gate]
command = ["python3", "-m", "pytest", "tests/test_op.py", "-q"]

[bench]
command = ["python3", "bench.py"]
shapes = ["small", "big"]
rounds = 2
)";

std::string bench_json(double small_ms, double big_ms) {
    return "warming up\n{\"shapes\": [{\"name\": \"small\", \"samples_ms\": [" + std::to_string(small_ms) + ", " +
           std::to_string(small_ms * 1.01) + ", " + std::to_string(small_ms * 0.99) + "]}, {\"name\": \"big\", \"samples_ms\": [" +
           std::to_string(big_ms) + ", " + std::to_string(big_ms) + ", " + std::to_string(big_ms * 1.02) + "], \"bytes\": 1000}]}\n";
}

class BlackboxEvaluationTest : public ::testing::Test {
protected:
    scoped_temp_dir m_dir{"kloop-bb-eval-test"};
    fs::path m_repo, m_candidate, m_scratch;
    std::optional<spec::op_spec> m_spec;
    fake_runner m_runner;

    void SetUp() override {
        m_repo = fs::weakly_canonical(m_dir.path()) / "repo";
        write_file_atomic(m_repo / "ops" / "kernel.py", "v0\n");
        write_file_atomic(m_repo / "tests" / "test_op.py", "tests\n");
        write_file_atomic(m_repo / "bench.py", "bench\n");
        write_file_atomic(m_repo / "op.toml", spec_text);
        m_candidate = m_dir.path() / "cand.py";
        write_file_atomic(m_candidate, "candidate\n");
        m_scratch = m_dir.path() / "scratch";
        m_spec = spec::load_op_spec(m_repo);
        m_runner.gate = [](const platform::process_request&) { return scripted{0, "....\n4 passed in 0.10s\n", ""}; };
        m_runner.bench = [](const platform::process_request&) { return scripted{0, bench_json(1.0, 5.0), ""}; };
    }

    eval::evaluation run(eval::evaluation_options o = {}) {
        return backend::blackbox::evaluate(eval::evaluation_context{*m_spec, m_candidate, o, m_runner, m_dir.path() / "cache", m_scratch});
    }
};

TEST_F(BlackboxEvaluationTest, GreenGateThenBenchWithKloopsStatistics) {
    std::string placed;
    m_runner.gate = [&](const platform::process_request& r) {
        placed = read_file(r.cwd / "ops" / "kernel.py");
        EXPECT_EQ(r.argv[0], "/usr/bin/env");
        EXPECT_EQ(r.argv[1], "-i");
        return scripted{0, "4 passed in 0.10s\n", ""};
    };
    const auto ev = run();
    EXPECT_EQ(placed, "candidate\n");
    EXPECT_EQ(read_file(m_repo / "ops" / "kernel.py"), "v0\n");
    EXPECT_EQ(ev.status, eval::disposition::passed) << ev.reason;
    EXPECT_TRUE(ev.gate.pass);
    EXPECT_FALSE(ev.gate.partial);
    ASSERT_TRUE(ev.repository);
    ASSERT_EQ(ev.repository->gate.size(), 1u);
    EXPECT_EQ(ev.repository->gate[0].summary.passed, 4);
    ASSERT_TRUE(ev.bench.ran);
    EXPECT_TRUE(ev.bench.ok);
    ASSERT_EQ(ev.bench.shapes.size(), 2u);
    EXPECT_EQ(ev.bench.shapes[0].shape, "small");
    EXPECT_EQ(ev.bench.shapes[0].mode, "bench");
    EXPECT_EQ(ev.bench.shapes[0].samples_s.size(), 6u);  // two rounds of three samples, pooled
    ASSERT_TRUE(ev.bench.shapes[1].stats_s);
    EXPECT_NEAR(ev.bench.shapes[1].stats_s->median, 5e-3, 1e-9);
    EXPECT_EQ(ev.bench.shapes[1].bytes, 1000.0);
    EXPECT_EQ(ev.repository->bench.size(), 2u);
    // The record's wall times: the gate command's, and the bench rounds' together.
    EXPECT_DOUBLE_EQ(ev.gate.wall_s, 0.25);
    EXPECT_DOUBLE_EQ(ev.bench.wall_s, 0.5);
    EXPECT_NE(ev.env.compiler.find("Python 3.11.2"), std::string::npos);
    const auto j = report::to_json(ev);
    EXPECT_EQ(j.at("blackbox").at("gate").at(0).at("summary").at("passed"), 4);
    EXPECT_EQ(j.at("blackbox").at("gate").at(0).at("exit_code"), 0);
    EXPECT_TRUE(j.at("blackbox").at("gate").at(0).at("env").contains("PYTHONDONTWRITEBYTECODE"));
    const auto text = report::to_text(ev);
    EXPECT_NE(text.find("gate: PASS"), std::string::npos) << text;
    EXPECT_NE(text.find("python3 -m pytest tests/test_op.py -q"), std::string::npos) << text;
    EXPECT_NE(text.find("result: PASSED"), std::string::npos) << text;
}

TEST_F(BlackboxEvaluationTest, FailedTestsAreRedAndNamedAndNoBench) {
    int bench_runs = 0;
    m_runner.bench = [&](const platform::process_request&) {
        ++bench_runs;
        return scripted{0, bench_json(1, 1), ""};
    };
    m_runner.gate = [](const platform::process_request&) {
        return scripted{1,
                        "FAILED tests/test_op.py::test_a[x] - AssertionError: mismatch\n1 failed, 3 passed in 0.2s\n", ""};
    };
    const auto ev = run();
    EXPECT_EQ(ev.status, eval::disposition::gate_failed);
    EXPECT_FALSE(ev.gate.pass);
    EXPECT_EQ(bench_runs, 0);
    EXPECT_FALSE(ev.bench.ran);
    EXPECT_NE(ev.reason.find("exit 1 (tests failed): 1 failed, 3 passed"), std::string::npos) << ev.reason;
    ASSERT_EQ(ev.gate.cases.size(), 1u);
    EXPECT_EQ(ev.gate.cases[0].shape, "tests/test_op.py::test_a[x]");
    EXPECT_NE(report::to_text(ev).find("not run (red gate"), std::string::npos);
}

TEST_F(BlackboxEvaluationTest, GreenNeedsExitZeroAndASummaryWithAPassedTest) {
    struct row {
        scripted s;
        bool green;
        std::string words;
    };
    const std::vector<row> rows = {
        {{0, "4 passed in 0.1s\n", ""}, true, ""},
        {{0, "....\n", ""}, false, "no pytest summary line"},
        {{0, "3 skipped in 0.1s\n", ""}, false, "passed no test"},
        {{5, "no tests ran in 0.01s\n", ""}, false, "collected no tests (exit 5)"},
        {{5, "12 deselected in 0.01s\n", ""}, false, "exit 5"},
        {{0, "1 failed, 3 passed in 0.1s\n", ""}, false, "exited 0 but reported"},
        {{2, "!!! KeyboardInterrupt !!!\n1 passed in 0.1s\n", ""}, false, "exit 2 (pytest was interrupted)"},
        {{4, "", "ERROR: file or directory not found: tests/x.py\n\nno tests ran in 0.00s\n"}, false, "exit 4 (pytest usage error)"},
        {{-1, "", "", 11}, false, "killed by SIGSEGV"},
        {{-1, "", "", 9, true}, false, "timed out"},
    };
    for (const auto& r : rows) {
        m_runner.gate = [&](const platform::process_request&) { return r.s; };
        eval::evaluation_options o;
        o.bench = false;
        const auto ev = run(o);
        EXPECT_EQ(ev.gate.pass, r.green) << r.s.out << r.s.err;
        if (!r.green) {
            EXPECT_NE(ev.reason.find(r.words), std::string::npos) << ev.reason;
        }
    }
}

TEST_F(BlackboxEvaluationTest, CrashAndTimeoutAreRunnerFailuresForTheClassification) {
    m_runner.gate = [](const platform::process_request&) { return scripted{-1, "", "", 11}; };
    auto ev = run();
    EXPECT_NE(ev.gate.runner_failure.find("SIGSEGV"), std::string::npos) << ev.gate.runner_failure;
    m_runner.gate = [](const platform::process_request&) { return scripted{-1, "", "", 9, true}; };
    ev = run();
    EXPECT_NE(ev.gate.runner_failure.find("timed out"), std::string::npos) << ev.gate.runner_failure;
}

TEST_F(BlackboxEvaluationTest, GateKBecomesPytestKAndMarksThePartialRun) {
    std::vector<std::string> argv;
    m_runner.gate = [&](const platform::process_request& r) {
        argv = r.argv;
        return scripted{0, "2 passed, 2 deselected in 0.1s\n", ""};
    };
    eval::evaluation_options o;
    o.gate_k = "n64 and not big";
    o.bench = false;
    const auto ev = run(o);
    ASSERT_GE(argv.size(), 2u);
    EXPECT_EQ(argv[argv.size() - 2], "-k");
    EXPECT_EQ(argv.back(), "n64 and not big");
    EXPECT_TRUE(ev.gate.pass);
    EXPECT_TRUE(ev.gate.partial);
    EXPECT_EQ(ev.gate.gate_k, "n64 and not big");
    EXPECT_NE(report::to_text(ev).find("PARTIAL"), std::string::npos);
    for (const auto& c : ev.integrity)
        if (c.name == "skipped_tests") {
            EXPECT_EQ(c.status, eval::check_status::pass) << c.detail;  // deselection expected with -k
        }
}

TEST_F(BlackboxEvaluationTest, SkippedTestsWarn) {
    m_runner.gate = [](const platform::process_request&) { return scripted{0, "3 passed, 1 skipped in 0.1s\n", ""}; };
    eval::evaluation_options o;
    o.bench = false;
    const auto ev = run(o);
    EXPECT_TRUE(ev.gate.pass);
    bool seen = false;
    for (const auto& c : ev.integrity)
        if (c.name == "skipped_tests") {
            seen = true;
            EXPECT_EQ(c.status, eval::check_status::warn);
        }
    EXPECT_TRUE(seen);
}

TEST_F(BlackboxEvaluationTest, AFrozenFileEditedDuringTheRunIsRed) {
    m_runner.gate = [](const platform::process_request& r) {
        write_file_atomic(r.cwd / "tests" / "test_op.py", "weakened\n");
        return scripted{0, "4 passed in 0.1s\n", ""};
    };
    const auto ev = run();
    EXPECT_FALSE(ev.gate.pass);
    EXPECT_NE(ev.reason.find("frozen file 'tests/test_op.py' was modified"), std::string::npos) << ev.reason;
    EXPECT_EQ(read_file(m_repo / "tests" / "test_op.py"), "tests\n");
}

TEST_F(BlackboxEvaluationTest, RefusedVariablesStopBeforeAnythingRuns) {
    ::setenv("SKIP_TEST_FOO", "1", 1);
    try {
        (void)run();
        ADD_FAILURE() << "no refusal";
    } catch (const usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("SKIP_TEST_FOO"), std::string::npos);
    }
    ::unsetenv("SKIP_TEST_FOO");
    EXPECT_TRUE(m_runner.seen.empty());
}

TEST_F(BlackboxEvaluationTest, ModeOptionIsRefused) {
    eval::evaluation_options o;
    o.modes = {"fwd"};
    EXPECT_THROW((void)run(o), usage_error);
}

TEST_F(BlackboxEvaluationTest, BenchProblemsRejectTheCandidate) {
    const std::vector<std::pair<scripted, std::string>> rows = {
        {{0, "no json here\n", ""}, "no JSON line"},
        {{0, "{\"shapes\": [{\"name\": \"small\", \"samples_ms\": [1.0]}]}\n", ""}, "'bench/big' is missing"},
        {{1, "", "Traceback\nRuntimeError: CUDA error\n"}, "exited with 1 (stderr: RuntimeError: CUDA error)"},
        {{-1, "", "", 6}, "killed by SIGABRT"},
    };
    for (const auto& [s, words] : rows) {
        m_runner.bench = [&](const platform::process_request&) { return s; };
        const auto ev = run();
        EXPECT_EQ(ev.status, eval::disposition::gate_failed);
        EXPECT_TRUE(ev.gate.pass);
        EXPECT_FALSE(ev.bench.ok);
        EXPECT_NE(ev.reason.find(words), std::string::npos) << ev.reason;
    }
}

TEST_F(BlackboxEvaluationTest, BenchReceivesTheStoppingRuleHints) {
    std::vector<std::string> argv;
    m_runner.bench = [&](const platform::process_request& r) {
        argv = r.argv;
        return scripted{0, bench_json(1, 1), ""};
    };
    eval::evaluation_options o;
    o.stop.min_samples = 7;
    (void)run(o);
    EXPECT_NE(std::find(argv.begin(), argv.end(), "KLOOP_BENCH_MIN_SAMPLES=7"), argv.end());
}

TEST_F(BlackboxEvaluationTest, AbInterleavesTheSidesAndComparesTheirSamples) {
    write_file_atomic(m_dir.path() / "base.py", "base\n");
    std::vector<std::string> order;
    m_runner.bench = [&](const platform::process_request& r) {
        const auto who = read_file(r.cwd / "ops" / "kernel.py");
        order.push_back(who == "base\n" ? "B" : "C");
        return who == "base\n" ? scripted{0, bench_json(2.0, 10.0), ""} : scripted{0, bench_json(1.0, 5.0), ""};
    };
    eval::ab_context ctx{*m_spec, m_dir.path() / "base.py", m_candidate, {}, {}, m_runner, m_dir.path() / "cache", m_scratch};
    const auto ab = backend::blackbox::compare(ctx);
    ASSERT_TRUE(ab.timed);
    EXPECT_TRUE(ab.ok) << ab.reason;
    const std::vector<std::string> abba = {"B", "C", "C", "B"};
    EXPECT_EQ(order, abba);
    ASSERT_EQ(ab.shapes.size(), 2u);
    ASSERT_TRUE(ab.shapes[0].verdict);
    EXPECT_NEAR(ab.shapes[0].verdict->speedup, 2.0, 0.05);
    EXPECT_EQ(ab.shapes[0].base_samples_s.size(), 6u);
    ASSERT_TRUE(ab.overall);
    EXPECT_EQ(ab.overall->verdict, measure::ab_verdict::faster);
    EXPECT_EQ(ab.candidate.repository->bench.size(), 2u);
    EXPECT_EQ(ab.base.repository->bench.size(), 2u);
}

TEST_F(BlackboxEvaluationTest, AbNeverTimesARedGate) {
    write_file_atomic(m_dir.path() / "base.py", "base\n");
    int bench_runs = 0;
    m_runner.bench = [&](const platform::process_request&) {
        ++bench_runs;
        return scripted{0, bench_json(1, 1), ""};
    };
    m_runner.gate = [](const platform::process_request& r) {
        return read_file(r.cwd / "ops" / "kernel.py") == "base\n" ? scripted{0, "4 passed in 0.1s\n", ""}
                                                                 : scripted{1, "1 failed, 3 passed in 0.1s\n", ""};
    };
    eval::ab_context ctx{*m_spec, m_dir.path() / "base.py", m_candidate, {}, {}, m_runner, m_dir.path() / "cache", m_scratch};
    const auto ab = backend::blackbox::compare(ctx);
    EXPECT_FALSE(ab.timed);
    EXPECT_FALSE(ab.overall);
    EXPECT_EQ(bench_runs, 0);
    EXPECT_NE(ab.reason.find("the candidate's gate is red"), std::string::npos) << ab.reason;
}

// The value of VAR in an `env -i ... VAR=value ... prog` argv.
std::string env_in(const platform::process_request& r, const std::string& var) {
    for (const auto& a : r.argv)
        if (a.rfind(var + "=", 0) == 0) return a.substr(var.size() + 1);
    return {};
}

// A two-sided bench: reads KLOOP_BENCH_SIDES, answers with per-side shapes (base twice as slow).
scripted two_sided(const platform::process_request& r, std::vector<std::string>& first_side) {
    const auto sides = nlohmann::json::parse(env_in(r, "KLOOP_BENCH_SIDES"));
    first_side.push_back(sides.at(0).at("name"));
    nlohmann::json out = {{"method", "interleaved"}, {"order", "ABBA per sample"}, {"sides", nlohmann::json::object()}};
    for (const auto& side : sides) {
        const bool is_base = read_file(fs::path(side.at("root").get<std::string>()) / "ops" / "kernel.py") == "base\n";
        const double t = is_base ? 2.0 : 1.0;
        out["sides"][side.at("name").get<std::string>()] = {
            {"shapes", {{{"name", "small"}, {"samples_ms", {t, t * 1.01, t * 0.99}}},
                        {{"name", "big"}, {"samples_ms", {5 * t, 5 * t, 5 * t * 1.02}}}}}};
    }
    return scripted{0, out.dump() + "\n", ""};
}

class TwoSidedAbTest : public BlackboxEvaluationTest {
protected:
    void SetUp() override {
        BlackboxEvaluationTest::SetUp();
        std::string text = spec_text;
        text.replace(text.find("rounds = 2"), 10, "rounds = 2\nsides = true");
        write_file_atomic(m_repo / "op.toml", text);
        m_spec = spec::load_op_spec(m_repo);
        write_file_atomic(m_dir.path() / "base.py", "base\n");
    }

    eval::ab_evaluation compare() {
        eval::ab_context ctx{*m_spec, m_dir.path() / "base.py", m_candidate, {}, {}, m_runner, m_dir.path() / "cache", m_scratch};
        return backend::blackbox::compare(ctx);
    }
};

TEST_F(TwoSidedAbTest, OneProcessPerRoundTimesBothCopiesTheOrderAlternating) {
    std::vector<std::string> first_side;
    int runs = 0;
    m_runner.bench = [&](const platform::process_request& r) {
        ++runs;
        EXPECT_FALSE(fs::exists(r.cwd / "ops" / "kernel.py")) << "runs from an empty directory, not in a copy";
        return two_sided(r, first_side);
    };
    const auto ab = compare();
    ASSERT_TRUE(ab.timed);
    EXPECT_TRUE(ab.ok) << ab.reason;
    EXPECT_EQ(runs, 2);
    EXPECT_EQ(first_side, (std::vector<std::string>{"base", "candidate"}));
    ASSERT_TRUE(ab.shapes[0].verdict);
    EXPECT_NEAR(ab.shapes[0].verdict->speedup, 2.0, 0.05);
    EXPECT_EQ(ab.shapes[0].base_samples_s.size(), 6u);
    EXPECT_NE(ab.candidate.repository->ab_timing.find("one process"), std::string::npos);
    EXPECT_EQ(ab.candidate.repository->ab_timing_fallback, "");
    EXPECT_EQ(ab.candidate.repository->bench.size(), 2u);
}

TEST_F(TwoSidedAbTest, AFallbackTimesEveryRoundInSeparateProcessesAndKeepsTheReason) {
    std::vector<std::string> kinds;
    m_runner.bench = [&](const platform::process_request& r) {
        if (!env_in(r, "KLOOP_BENCH_SIDES").empty()) {
            kinds.push_back("sides");
            return scripted{0, "{\"fallback\": \"importing side 'candidate' started 1 thread(s)\"}\n", ""};
        }
        kinds.push_back(read_file(r.cwd / "ops" / "kernel.py") == "base\n" ? "B" : "C");
        return kinds.back() == "B" ? scripted{0, bench_json(2.0, 10.0), ""} : scripted{0, bench_json(1.0, 5.0), ""};
    };
    const auto ab = compare();
    EXPECT_TRUE(ab.ok) << ab.reason;
    EXPECT_EQ(kinds, (std::vector<std::string>{"sides", "B", "C", "C", "B"}));
    EXPECT_NE(ab.candidate.repository->ab_timing.find("separate processes"), std::string::npos);
    EXPECT_NE(ab.candidate.repository->ab_timing_fallback.find("started 1 thread"), std::string::npos);
    EXPECT_EQ(ab.base.repository->bench.size(), 2u);
}

TEST_F(TwoSidedAbTest, AVoidRunRejectsTheCandidateAndAnErrorNamingTheBaseBlamesIt) {
    m_runner.bench = [](const platform::process_request&) {
        return scripted{3, "{\"error\": \"side 'base': 'k.f' was rebound during a warm-up call of side 'candidate'\", \"void\": true}\n", ""};
    };
    auto ab = compare();
    EXPECT_FALSE(ab.ok);
    EXPECT_NE(ab.reason.find("the candidate's bench failed: the A/B is void"), std::string::npos) << ab.reason;
    m_runner.bench = [](const platform::process_request&) {
        return scripted{2, "{\"error\": \"side 'base': importing ops failed\"}\n", ""};
    };
    ab = compare();
    EXPECT_FALSE(ab.ok);
    EXPECT_NE(ab.reason.find("the base's bench failed"), std::string::npos) << ab.reason;
    m_runner.bench = [](const platform::process_request&) { return scripted{0, "{\"sides\": {\"base\": {\"shapes\": [{\"name\": \"small\", \"samples_ms\": [1]}, {\"name\": "
                        "\"big\", \"samples_ms\": [1]}]}}}\n", ""};
    };
    ab = compare();
    EXPECT_FALSE(ab.ok);
    EXPECT_NE(ab.reason.find("side 'candidate' is missing"), std::string::npos) << ab.reason;
}

class GateReuseTest : public BlackboxEvaluationTest {
protected:
    int m_gates = 0;

    void SetUp() override {
        BlackboxEvaluationTest::SetUp();
        m_runner.gate = [&](const platform::process_request&) {
            ++m_gates;
            return scripted{0, "....\n4 passed in 0.10s\n", "", 0, false, 12.5};
        };
    }

    eval::evaluation gate_of(bool reuse, eval::evaluation_options o = {}, std::vector<fs::path> leave_out = {}) {
        o.bench = false;
        return backend::blackbox::evaluate(eval::evaluation_context{*m_spec, m_candidate, o, m_runner, m_dir.path() / "cache",
                                                                    m_scratch, m_dir.path() / "state", reuse, leave_out});
    }
};

TEST_F(GateReuseTest, AGreenGateStandsInOnlyForTheSameBytesCommandAndEnvironment) {
    auto ev = gate_of(false);  // runs, and stores the green gate
    EXPECT_EQ(m_gates, 1);
    EXPECT_FALSE(ev.repository->gate.front().reused);
    ev = gate_of(true);  // the same inputs: reused
    EXPECT_EQ(m_gates, 1);
    ASSERT_TRUE(ev.repository->gate.front().reused);
    EXPECT_TRUE(ev.gate.pass);
    EXPECT_EQ(ev.status, eval::disposition::passed);
    EXPECT_DOUBLE_EQ(ev.repository->gate.front().reused->wall_s, 12.5);
    EXPECT_EQ(ev.repository->gate.front().summary.passed, 4);
    EXPECT_FALSE(ev.repository->gate.front().run.argv.empty());

    write_file_atomic(m_repo / "ops" / "helper.py", "x = 1\n");  // any repository file, not only a frozen one
    (void)gate_of(true);
    EXPECT_EQ(m_gates, 2);
    (void)gate_of(true);  // stored again under the new bytes
    EXPECT_EQ(m_gates, 2);
    write_file_atomic(m_candidate, "candidate 2\n");
    (void)gate_of(true);
    EXPECT_EQ(m_gates, 3);
    eval::evaluation_options o;
    o.timeout_s = 77;  // a different timeout is a different gate
    (void)gate_of(true, o);
    EXPECT_EQ(m_gates, 4);
}

TEST_F(GateReuseTest, AProposalInTheRepositoryIsLeftOutOfTheCopiesSoTheBaseStillMatches) {
    (void)gate_of(false);  // v0 at init: no proposal yet
    EXPECT_EQ(m_gates, 1);
    // The iteration's proposal, where kloop's hint puts it: at the repository's root.
    const fs::path proposal = m_repo / "optimization_proposal.md";
    write_file_atomic(proposal, "Direction: x\n");
    auto ev = gate_of(true, {}, {proposal});
    EXPECT_EQ(m_gates, 1);
    EXPECT_TRUE(ev.repository->gate.front().reused);
    (void)gate_of(true);  // not left out, it is a repository file like any other: the bytes differ
    EXPECT_EQ(m_gates, 2);
}

TEST_F(GateReuseTest, TheTargetAndTheFrozenFilesAreCopiedWhateverIsLeftOut) {
    // Every copy the gate ran in held the test file and the candidate at the target.
    std::vector<std::string> missing;
    bool left_out_bench = false;
    m_runner.gate = [&](const platform::process_request& req) {
        ++m_gates;
        const fs::path copy = req.cwd;
        for (const char* f : {"tests/test_op.py", "ops/kernel.py"})
            if (!fs::exists(copy / f)) missing.push_back(f);
        left_out_bench = !fs::exists(copy / "bench.py");
        return scripted{0, "....\n4 passed in 0.10s\n", ""};
    };
    (void)gate_of(false, {}, {m_repo / "tests" / "test_op.py", m_repo / "ops" / "kernel.py", m_repo / "bench.py"});
    EXPECT_EQ(m_gates, 1);
    EXPECT_TRUE(missing.empty()) << missing.front();
    EXPECT_TRUE(left_out_bench);  // any other file is left out as asked
}

TEST_F(GateReuseTest, RedAndPartialGatesAreNeverReused) {
    m_runner.gate = [&](const platform::process_request&) {
        ++m_gates;
        return scripted{1, "1 failed, 3 passed in 0.1s\n", ""};
    };
    (void)gate_of(false);
    const auto ev = gate_of(true);
    EXPECT_EQ(m_gates, 2);
    EXPECT_FALSE(ev.gate.pass);
    m_runner.gate = [&](const platform::process_request&) {
        ++m_gates;
        return scripted{0, "2 passed, 2 deselected in 0.1s\n", ""};
    };
    eval::evaluation_options o;
    o.gate_k = "small";
    (void)gate_of(false, o);
    (void)gate_of(true, o);
    EXPECT_EQ(m_gates, 4);
}

TEST(BenchOutputTest, TwoSidedOutputs) {
    const std::vector<spec::blackbox_bench_shape> want = {{"bench", "a", 1}};
    const auto ok = backend::blackbox::parse_sides_output(
        "noise\n{\"sides\": {\"base\": {\"shapes\": [{\"name\": \"a\", \"samples_ms\": [2]}]}, \"candidate\": {\"shapes\": "
        "[{\"name\": \"a\", \"samples_ms\": [1]}]}}, \"method\": \"interleaved\"}\n",
        {"base", "candidate"}, want);
    EXPECT_EQ(ok.what, backend::blackbox::sides_output::kind::sides);
    EXPECT_EQ(ok.shapes.at("base").at(0).samples_s, (std::vector<double>{2e-3}));
    EXPECT_EQ(ok.method, "interleaved");
    EXPECT_EQ(ok.idle_threads, "");
    const auto idle = backend::blackbox::parse_sides_output(
        "{\"sides\": {\"base\": {\"shapes\": [{\"name\": \"a\", \"samples_ms\": [2]}]}, \"candidate\": {\"shapes\": "
        "[{\"name\": \"a\", \"samples_ms\": [1]}]}}, \"idle_threads\": [{\"during\": \"importing side 'base'\", "
        "\"threads\": \"python3 x15\"}, {\"during\": \"a warm-up call of side 'candidate'\", \"threads\": \"pool x1\"}]}",
        {"base", "candidate"}, want);
    EXPECT_EQ(idle.idle_threads, "python3 x15 (importing side 'base'); pool x1 (a warm-up call of side 'candidate')");
    const auto fb = backend::blackbox::parse_sides_output("{\"fallback\": \"why\"}", {"base", "candidate"}, want);
    EXPECT_EQ(fb.what, backend::blackbox::sides_output::kind::fallback);
    EXPECT_EQ(fb.message, "why");
    const auto er = backend::blackbox::parse_sides_output("{\"error\": \"bad\", \"void\": true}", {"base"}, want);
    EXPECT_TRUE(er.void_run);
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"{\"shapes\": []}", "no JSON line with \"sides\""},
        {"{\"sides\": []}", "must be an object"},
        {"{\"sides\": {\"base\": {\"shapes\": [{\"name\": \"a\", \"samples_ms\": [1]}]}}}", "side 'candidate' is missing"},
        {"{\"sides\": {\"base\": {\"shapes\": []}, \"candidate\": {\"shapes\": []}}}", "side 'base': bench output: shape 'bench/a' is missing"},
    };
    for (const auto& [text, words] : bad) {
        try {
            (void)backend::blackbox::parse_sides_output(text, {"base", "candidate"}, want);
            ADD_FAILURE() << "accepted: " << text;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
        }
    }
}

TEST(BenchOutputTest, ParsesTheLastJsonLine) {
    const std::vector<spec::blackbox_bench_shape> want = {{"bench", "a", 1}, {"fwd", "b", 2}};
    const auto got = backend::blackbox::parse_bench_output(
        "{\"shapes\": []}\nnoise\n{\"shapes\": [{\"name\": \"a\", \"samples_ms\": [1, 2]}, {\"mode\": \"fwd\", \"name\": \"b\", "
        "\"samples_ms\": [0.5], \"flops\": 10}]}\n",
        want);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].samples_s, (std::vector<double>{1e-3, 2e-3}));
    EXPECT_EQ(got[1].mode, "fwd");
    EXPECT_EQ(got[1].flops, 10.0);
}

TEST(BenchOutputTest, RejectsBadOutputsWithAReason) {
    const std::vector<spec::blackbox_bench_shape> want = {{"bench", "a", 1}};
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"", "no JSON line"},
        {"{\"shapes\": {}}", "must be an array"},
        {"{\"shapes\": [{\"samples_ms\": [1]}]}", "string \"name\""},
        {"{\"shapes\": [{\"name\": \"z\", \"samples_ms\": [1]}]}", "not in the spec's [bench] shapes"},
        {"{\"shapes\": [{\"name\": \"a\", \"samples_ms\": []}]}", "non-empty array"},
        {"{\"shapes\": [{\"name\": \"a\", \"samples_ms\": [0]}]}", "finite time > 0"},
        {"{\"shapes\": [{\"name\": \"a\", \"samples_ms\": [\"1\"]}]}", "finite time > 0"},
        {"{\"shapes\": [{\"name\": \"a\", \"samples_ms\": [1]}, {\"name\": \"a\", \"samples_ms\": [1]}]}", "reported twice"},
        {"{\"shapes\": []}", "'bench/a' is missing"},
    };
    for (const auto& [text, words] : bad) {
        try {
            (void)backend::blackbox::parse_bench_output(text, want);
            ADD_FAILURE() << "accepted: " << text;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
        }
    }
}

}  // namespace
