// Unit under test: `kloop compare`, `kloop verify --base` and `kloop noise` end to end on the CPU
// (kloop → two gates → one interleaved A/B runner), on examples/rmsnorm: a version that does its
// work twice is SLOWER, a version against itself is not FASTER, a red base is reported red
// (exit 3), and --base REF checks the candidate's file out of a real temporary git repository
// into a worktree that is gone afterwards — also when the ref does not exist (exit 2).
#include <algorithm>
#include <gtest/gtest.h>

#include <iostream>

#include <cstdio>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "kloop_process.hpp"
#include "platform/file_io.hpp"

namespace fs = std::filesystem;
using kloop::testing::example_dir;
using kloop::testing::quick_bench;
using kloop::testing::source_dir;

namespace {

std::string slow_fixture() { return source_dir() + "/tests/fixtures/rmsnorm_slow2x.cpp"; }
std::string v1() { return example_dir() + "/versions/v1_rowwise.cpp"; }

// `kloop <args>` with KLOOP_HOME shared by the integration tests and, when given, TMPDIR.
kloop::testing::kloop_run run_kloop_in(const std::vector<std::string>& args, const std::string& tmpdir = "",
                                       const std::string& home = std::string(KLOOP_TEST_BINARY_DIR) + "/test-home") {
    kloop::platform::process_request req;
    req.argv = {std::string(KLOOP_TEST_BINARY_DIR) + "/src/kloop"};
    req.argv.insert(req.argv.end(), args.begin(), args.end());
    req.env_overrides = {{"KLOOP_HOME", home}};
    if (!tmpdir.empty()) req.env_overrides.emplace_back("TMPDIR", tmpdir);
    req.timeout_s = 300;
    req.max_capture_bytes = 64 << 20;
    kloop::platform::posix_command_runner runner;
    const auto r = runner.run(req);
    kloop::testing::kloop_run k;
    k.exit_code = r.started && r.term_signal == 0 && !r.timed_out ? r.exit_code : -1;
    k.out = r.stdout_text;
    k.err = r.stderr_text;
    k.record = nlohmann::json::parse(k.out, nullptr, false);
    if (k.record.is_discarded()) k.record = nullptr;
    return k;
}

std::vector<std::string> compare_args(const std::string& candidate, const std::string& base, bool json = true) {
    std::vector<std::string> a = {"compare", example_dir(), "--candidate", candidate, "--base", base};
    if (json) a.push_back("--json");
    for (const auto& q : quick_bench()) a.push_back(q);
    return a;
}

std::string git(const fs::path& dir, std::vector<std::string> args) {
    kloop::platform::process_request req;
    req.argv = {"git", "-C", dir.string(), "-c", "user.name=kloop test", "-c", "user.email=test@kloop.invalid"};
    req.argv.insert(req.argv.end(), args.begin(), args.end());
    req.timeout_s = 60;
    kloop::platform::posix_command_runner runner;
    const auto r = runner.run(req);
    EXPECT_TRUE(r.succeeded()) << "git " << args.front() << ": " << r.stderr_text;
    return r.stdout_text;
}

int count_lines(const std::string& s) {
    int n = 0;
    std::istringstream in(s);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) ++n;
    return n;
}

int entries_named(const fs::path& dir, const std::string& prefix) {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename().string().rfind(prefix, 0) == 0) ++n;
    return n;
}

std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write(const fs::path& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
}

// A repository holding one candidate: committed doing its work once, then modified (in the work
// tree, not committed) to do it twice.
struct temp_repo {
    kloop::platform::scoped_temp_dir dir{"kloop-compare-test-repo"};
    fs::path candidate;

    temp_repo() {
        git(dir.path(), {"init", "-q"});
        candidate = dir.path() / "rmsnorm_cand.cpp";
        auto text = read(slow_fixture());
        const std::string two = "kPasses = 2", one = "kPasses = 1";
        const auto at = text.find(two);
        EXPECT_NE(at, std::string::npos);
        write(candidate, std::string(text).replace(at, two.size(), one));
        git(dir.path(), {"add", "rmsnorm_cand.cpp"});
        git(dir.path(), {"commit", "-q", "-m", "one pass"});
        write(candidate, text);  // two passes: the work-tree version is ~2x slower than HEAD's
    }
};

}  // namespace

TEST(CompareTest, VersionDoingTwiceTheWorkIsSlower) {
    const auto r = run_kloop_in(compare_args(slow_fixture(), v1()));
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto& rec = r.record;
    ASSERT_TRUE(rec.is_object());
    EXPECT_EQ(rec.at("schema_version"), 1);
    EXPECT_EQ(rec.at("kind"), "kloop.compare");
    EXPECT_TRUE(rec.at("ok").get<bool>()) << rec.at("reason");
    EXPECT_EQ(rec.at("base").at("label"), v1());
    EXPECT_EQ(rec.at("base").at("gate"), "pass");
    EXPECT_EQ(rec.at("candidate").at("gate"), "pass");
    EXPECT_TRUE(rec.at("candidate").at("git").contains("dirty"));
    EXPECT_FALSE(rec.at("command_line").empty());
    const auto& shapes = rec.at("shapes");
    ASSERT_EQ(shapes.size(), 2u * 3u);  // 2 modes x 3 bench shapes, none dropped
    // On a machine too busy for timing bounds the verdicts must still be SLOWER; how much slower,
    // and whether the early verdict settled it, are not held then.
    const auto busy = kloop::testing::machine_too_busy_for_timing();
    if (busy) std::printf("note: %s\n", busy->c_str());
    for (const auto& s : shapes) {
        EXPECT_TRUE(s.at("ok").get<bool>()) << s.dump();
        // Twice the work is never FASTER; on a busy machine the interval may not settle it.
        if (busy) {
            EXPECT_NE(s.at("verdict"), "FASTER") << s.at("mode") << "/" << s.at("shape");
        } else {
            EXPECT_EQ(s.at("verdict"), "SLOWER") << s.at("mode") << "/" << s.at("shape");
        }
        const double speedup = s.at("speedup").get<double>();
        if (!busy) {
            EXPECT_LT(speedup, 0.8);
        }
        EXPECT_LE(s.at("ci_low").get<double>(), speedup);
        EXPECT_GE(s.at("ci_high").get<double>(), speedup);
        // The stopping rule's minimum, unless the item's time cap came first (a busy machine).
        if (s.at("base_stop_reason") != "time_cap" && s.at("candidate_stop_reason") != "time_cap") {
            EXPECT_GE(s.at("base").at("n").get<int>(), 10);
            EXPECT_GE(s.at("candidate").at("n").get<int>(), 10);
        }
        EXPECT_GT(s.at("candidate").at("median_ms").get<double>(), s.at("base").at("median_ms").get<double>());
        EXPECT_EQ(s.at("base_samples_ms").size(), s.at("base").at("n").get<std::size_t>());
        EXPECT_GE(s.at("checks").at("candidate").at("total").get<int>(), 1);
        EXPECT_GE(s.at("checks").at("base").at("total").get<int>(), 1);
        EXPECT_EQ(s.at("checks").at("candidate").at("failed").get<int>(), 0);
    }
    const auto& overall = rec.at("overall");
    if (busy) {
        EXPECT_NE(overall.at("verdict"), "FASTER");
    } else {
        EXPECT_EQ(overall.at("verdict"), "SLOWER");
    }
    if (!busy) {
        EXPECT_LT(overall.at("geomean_speedup").get<double>(), 0.8);
    }
    EXPECT_LE(overall.at("ci_low").get<double>(), overall.at("geomean_speedup").get<double>());
    // A SLOWER this clear is settled early (measure/early_verdict.hpp): a shape that stopped at a
    // look stopped at 64 * 2^k samples per side, with the verdict the bootstrap then confirms.
    int early = 0, reached_a_look = 0;
    for (const auto& s : shapes) {
        if (s.at("base").at("n").get<int>() >= 64) ++reached_a_look;
        if (s.at("early_verdict").is_null()) continue;
        ++early;
        EXPECT_EQ(s.at("early_verdict"), s.at("verdict")) << s.dump();
        const int n = s.at("base").at("n").get<int>();
        EXPECT_EQ(n, s.at("candidate").at("n").get<int>());
        EXPECT_TRUE(n % 64 == 0 && ((n / 64) & (n / 64 - 1)) == 0) << n;
        EXPECT_TRUE(s.at("base_stop_reason") == "early_verdict" || s.at("candidate_stop_reason") == "early_verdict");
    }
    // Only a shape that reached a look (64 samples a side) can settle early; on a machine so busy
    // that none did, say so rather than fail.
    if (reached_a_look > 0 && !busy) {
        EXPECT_GE(early, 1);
    }
    else std::printf("note: no shape reached 64 samples a side (a busy machine): early verdicts not exercised\n");
    // The A/B runner's wall time holds every sample of both sides.
    double sampled_s = 0;
    for (const auto& s : shapes)
        for (const char* side : {"base_samples_ms", "candidate_samples_ms"})
            for (const auto& ms : s.at(side)) sampled_s += ms.get<double>() * 1e-3;
    EXPECT_GT(rec.at("timing_wall_s").get<double>(), sampled_s);
}

TEST(CompareTest, NoEarlyVerdictTimesEachSideToItsStoppingRule) {
    auto args = compare_args(slow_fixture(), v1());
    args.push_back("--no-early-verdict");
    const auto r = run_kloop_in(args);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    for (const auto& s : r.record.at("shapes")) {
        EXPECT_TRUE(s.at("early_verdict").is_null()) << s.dump();
        EXPECT_NE(s.at("base_stop_reason"), "early_verdict");
        EXPECT_NE(s.at("verdict"), "FASTER") << s.dump();  // twice the work, however busy the machine
    }
}

// A cap that would end an item after its first round still leaves each side the five windows
// the timer cross-check judges (measure::k_timer_min_windows), and the verdict says too few.
TEST(CompareTest, ACapLeavesEachSideFiveWindowsForTheTimerCheck) {
    std::vector<std::string> args = {"compare", example_dir(), "--candidate", v1(), "--base", v1(), "--json",
                                     "--mode", "fwd", "--no-early-verdict",
                                     "--min-samples", "2", "--min-time", "0", "--max-time", "0.001"};
    const auto r = run_kloop_in(args);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    ASSERT_FALSE(r.record.at("shapes").empty());
    for (const auto& s : r.record.at("shapes")) {
        EXPECT_EQ(s.at("base_stop_reason"), "time_cap") << s.dump();
        EXPECT_GE(s.at("base").at("n").get<int>(), 5) << s.dump();
        EXPECT_GE(s.at("candidate").at("n").get<int>(), 5) << s.dump();
        EXPECT_EQ(s.at("base").at("n"), s.at("candidate").at("n"));  // interleaved rounds
        EXPECT_NE(s.at("verdict"), "FASTER") << s.dump();
    }
    for (const char* side : {"base", "candidate"}) {
        const auto& integrity = r.record.at("evaluations").at(side).at("integrity");
        const auto timer = std::find_if(integrity.begin(), integrity.end(), [](const nlohmann::json& c) {
            return c.at("name") == "timer_cross_check";
        });
        ASSERT_NE(timer, integrity.end()) << integrity.dump();
        EXPECT_EQ(timer->at("status"), "pass") << side << ": " << timer->dump();
    }
}

TEST(CompareTest, IdenticalVersionIsNotFaster) {
    const auto r = run_kloop_in(compare_args(v1(), v1()));
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto& rec = r.record;
    ASSERT_TRUE(rec.at("ok").get<bool>()) << rec.at("reason");
    if (const auto busy = kloop::testing::machine_too_busy_for_timing()) GTEST_SKIP() << *busy;
    int faster = 0;
    for (const auto& s : rec.at("shapes")) {
        EXPECT_NE(s.at("verdict"), "SLOWER") << s.dump();
        faster += s.at("verdict") == "FASTER" ? 1 : 0;
        // Two copies of one library: the ratio is 1 up to noise.
        EXPECT_GT(s.at("speedup").get<double>(), 0.8);
        EXPECT_LT(s.at("speedup").get<double>(), 1.25);
    }
    EXPECT_EQ(faster, 0);
    EXPECT_NE(rec.at("overall").at("verdict"), "FASTER");
}

TEST(CompareTest, RedBaseIsReportedRedAndNothingIsTimed) {
    const auto r = run_kloop_in(compare_args(v1(), example_dir() + "/broken/wrong_result.cpp", false));
    EXPECT_EQ(r.exit_code, 3) << r.err << r.out;
    EXPECT_NE(r.out.find("gate FAIL"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("the base's gate is red"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("NOT COMPARED"), std::string::npos) << r.out;

    const auto j = run_kloop_in(compare_args(v1(), example_dir() + "/broken/wrong_result.cpp"));
    EXPECT_EQ(j.exit_code, 3);
    ASSERT_TRUE(j.record.is_object()) << j.out;
    EXPECT_EQ(j.record.at("base").at("status"), "gate_failed");
    EXPECT_EQ(j.record.at("base").at("gate"), "fail");
    EXPECT_EQ(j.record.at("candidate").at("gate"), "pass");
    EXPECT_FALSE(j.record.at("ok").get<bool>());
    EXPECT_FALSE(j.record.at("timed").get<bool>());
    EXPECT_TRUE(j.record.at("overall").is_null());
}

TEST(CompareTest, BaseFromGitRefUsesATemporaryWorktreeAndRemovesIt) {
    temp_repo repo;
    kloop::platform::scoped_temp_dir tmp("kloop-compare-test-tmp");
    const auto before = git(repo.dir.path(), {"worktree", "list"});
    ASSERT_EQ(count_lines(before), 1);

    auto args = compare_args(repo.candidate.string(), "HEAD", false);
    const auto r = run_kloop_in(args, tmp.path().string());
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    // Each side's line and the timing line carry their wall times.
    EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(gate PASS \([0-9]+ cases, [0-9]+\.[0-9] s\))"))) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(timing: .* \| [0-9]+\.[0-9] s\n)"))) << r.out;
    EXPECT_NE(r.out.find("HEAD:rmsnorm_cand.cpp"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("base_ms"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("new_ms"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("SLOWER"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" dirty"), std::string::npos) << r.out;  // the candidate's work tree is modified
    EXPECT_NE(r.out.find(" clean"), std::string::npos) << r.out;  // the base worktree is a clean checkout

    EXPECT_EQ(git(repo.dir.path(), {"worktree", "list"}), before);
    EXPECT_EQ(entries_named(tmp.path(), "kloop-base"), 0);
}

TEST(CompareTest, MissingGitRefIsAUsageErrorAndLeavesNothingBehind) {
    temp_repo repo;
    kloop::platform::scoped_temp_dir tmp("kloop-compare-test-tmp");
    const auto before = git(repo.dir.path(), {"worktree", "list"});
    const auto r = run_kloop_in(compare_args(repo.candidate.string(), "no-such-ref-42"), tmp.path().string());
    EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
    EXPECT_NE(r.err.find("--base"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("no-such-ref-42"), std::string::npos) << r.err;
    EXPECT_EQ(git(repo.dir.path(), {"worktree", "list"}), before);
    EXPECT_EQ(count_lines(git(repo.dir.path(), {"worktree", "list"})), 1);
    EXPECT_TRUE(fs::is_empty(tmp.path())) << "left in TMPDIR: " << fs::directory_iterator(tmp.path())->path();
}

TEST(CompareTest, VerifyWithBaseRefComparesAfterVerifying) {
    temp_repo repo;
    kloop::platform::scoped_temp_dir tmp("kloop-compare-test-tmp");
    const auto before = git(repo.dir.path(), {"worktree", "list"});
    std::vector<std::string> args = {"verify", example_dir(), "--candidate", repo.candidate.string(), "--base", "HEAD",
                                     "--json"};
    for (const auto& q : quick_bench()) args.push_back(q);
    const auto r = run_kloop_in(args, tmp.path().string());
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_EQ(r.record.at("status"), "passed");
    const auto& cmp = r.record.at("compare");
    EXPECT_EQ(cmp.at("base").at("label"), "HEAD:rmsnorm_cand.cpp");
    // Twice the base's work: SLOWER, or on a machine too busy to settle it at least not FASTER.
    if (kloop::testing::machine_too_busy_for_timing()) {
        EXPECT_NE(cmp.at("overall").at("verdict"), "FASTER");
    } else {
        EXPECT_EQ(cmp.at("overall").at("verdict"), "SLOWER");
    }
    EXPECT_EQ(git(repo.dir.path(), {"worktree", "list"}), before);
    EXPECT_EQ(entries_named(tmp.path(), "kloop-base"), 0);
}

TEST(CompareTest, VerifyWithMissingBaseRefFailsBeforeVerifying) {
    temp_repo repo;
    const auto r = run_kloop_in({"verify", example_dir(), "--candidate", repo.candidate.string(), "--base", "nope~3"});
    EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
    EXPECT_NE(r.err.find("option --base 'nope~3'"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("gate:"), std::string::npos) << r.out;  // nothing was verified
}

TEST(NoiseTest, ReportsNoiseFloorAndFalseVerdictRate) {
    std::vector<std::string> args = {"noise", example_dir(), "--candidate", v1(), "--runs", "2", "--json"};
    for (const auto& q : quick_bench()) args.push_back(q);
    const auto r = run_kloop_in(args);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto& rec = r.record;
    ASSERT_TRUE(rec.is_object()) << r.out;
    EXPECT_EQ(rec.at("kind"), "kloop.noise");
    EXPECT_EQ(rec.at("runs"), 2);
    ASSERT_EQ(rec.at("shapes").size(), 6u);
    const auto busy = kloop::testing::machine_too_busy_for_timing();
    for (const auto& s : rec.at("shapes")) {
        EXPECT_EQ(s.at("runs"), 2);
        EXPECT_EQ(s.at("speedups").size(), 2u);
        EXPECT_GE(s.at("noise_floor").get<double>(), 0.0);
        if (!busy) {
            EXPECT_LT(s.at("noise_floor").get<double>(), 0.25);
        }
    }
    if (busy) std::cout << "note: " << *busy << "\n";
    EXPECT_EQ(rec.at("overall").at("shape_verdicts"), 12);
    EXPECT_TRUE(rec.at("overall").contains("false_verdict_rate"));
    // The load is recorded whatever it was; the warning comes with a busy run, never without.
    const auto& load = rec.at("host_load");
    EXPECT_GT(load.at("samples").get<int>(), 0);
    EXPECT_EQ(rec.at("warnings").empty(), load.at("busy_runs").get<int>() == 0) << rec.at("warnings").dump();
}

// A process spinning beside the runs (one, so the runners keep a core of a two-core machine): the
// record counts the busy runs and warns, the text says so, and --require-quiet refuses the noise
// floor (exit 2) after printing it — a floor measured then is the load's. Runs alone (RUN_SERIAL).
TEST(NoiseTest, ABusyMachineIsWarnedAboutAndRequireQuietRefusesIt) {
    const kloop::testing::spinners busy(1);
    std::vector<std::string> args = {"noise", example_dir(), "--candidate", v1(), "--runs", "2", "--mode", "fwd"};
    for (const auto& q : quick_bench()) args.push_back(q);
    auto json_args = args;
    json_args.push_back("--json");
    const auto r = run_kloop_in(json_args);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto& load = r.record.at("host_load");
    EXPECT_TRUE(load.at("busy").get<bool>()) << load.dump();
    EXPECT_GE(load.at("busy_runs").get<int>(), 1) << load.dump();
    EXPECT_LE(load.at("busy_runs").get<int>(), 2);
    ASSERT_EQ(r.record.at("warnings").size(), 1u) << r.record.at("warnings").dump();
    EXPECT_EQ(r.record.at("warnings").at(0).at("code"), "busy_machine");

    args.push_back("--require-quiet");
    const auto refused = run_kloop_in(args);
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_NE(refused.out.find("warning (busy_machine)"), std::string::npos) << refused.out;  // printed first
    EXPECT_NE(refused.out.find("false verdicts"), std::string::npos) << refused.out;
    EXPECT_NE(refused.err.find("--require-quiet"), std::string::npos) << refused.err;
}

// The text form prints each run's shape verdicts as it goes, so a run cut short (a time box on
// the GPU machine) still shows them: one mark per (mode, shape) in the spec's order.
TEST(NoiseTest, EachRunLineCarriesItsShapeVerdicts) {
    std::vector<std::string> args = {"noise", example_dir(), "--candidate", v1(), "--runs", "2", "--mode", "fwd"};
    for (const auto& q : quick_bench()) args.push_back(q);
    const auto r = run_kloop_in(args);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const std::regex line(R"(run +[12]/2: geomean [0-9.]+x \[[0-9.]+, [0-9.]+\] [A-Z]+ \| per shape( [-+=?x]){3}\n)");
    EXPECT_EQ(std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), line), std::sregex_iterator()), 2) << r.out;
    // A header names the shape of each mark, in the run lines' order.
    EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(per-shape marks, in order:( fwd/[A-Za-z0-9_]+){3}\n)"))) << r.out;
}

// The base, the candidate and the reference are built at once before the gates; the gates then
// find them in the cache, yet the record keeps each build's own time (a fresh cache: no hits),
// and a second run hits the cache for all three.
TEST(CompareTest, BuildsRunTogetherAndTheRecordKeepsEachBuildsOwnTime) {
    const fs::path home = fs::temp_directory_path() / "kloop-it-compare-prebuild";
    fs::remove_all(home);
    auto args = compare_args(v1(), slow_fixture());
    for (const char* a : {"--mode", "fwd"}) args.emplace_back(a);
    const auto first = run_kloop_in(args, "", home.string());
    ASSERT_EQ(first.exit_code, 0) << first.err << first.out;
    const auto& ev = first.record.at("evaluations");
    for (const auto* b : {&ev.at("base").at("build").at("candidate"), &ev.at("candidate").at("build").at("candidate"),
                          &ev.at("base").at("build").at("reference")}) {
        EXPECT_FALSE(b->at("cache_hit").get<bool>()) << b->dump();
        EXPECT_GT(b->at("wall_s").get<double>(), 0.05) << b->dump();  // a g++ compile, not a lookup
    }
    const auto second = run_kloop_in(args, "", home.string());
    ASSERT_EQ(second.exit_code, 0) << second.err << second.out;
    const auto& ev2 = second.record.at("evaluations");
    EXPECT_TRUE(ev2.at("base").at("build").at("candidate").at("cache_hit").get<bool>());
    EXPECT_TRUE(ev2.at("candidate").at("build").at("candidate").at("cache_hit").get<bool>());
    fs::remove_all(home);
}
