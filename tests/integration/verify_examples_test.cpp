// Unit under test: `kloop verify` end to end on the CPU (kloop → kloop-runner → candidate .so),
// on every version of examples/rmsnorm (must pass, with statistics) and every broken candidate
// (must be rejected, each for its own reason).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "integration/expect_rejected.hpp"
#include "kloop_process.hpp"
#include "platform/file_io.hpp"

namespace fs = std::filesystem;
using kloop::testing::example_dir;
using kloop::testing::find_check;
using kloop::testing::gate_reasons;
using kloop::testing::quick_bench;
using kloop::testing::run_kloop;

namespace {

kloop::testing::kloop_run verify(const std::string& candidate, std::vector<std::string> extra = {},
                                 const std::vector<std::string>& bench = quick_bench()) {
    std::vector<std::string> args = {"verify", example_dir(), "--candidate", candidate, "--json"};
    for (const auto& a : bench) args.push_back(a);
    for (auto& a : extra) args.push_back(std::move(a));
    return run_kloop(args);
}

}  // namespace

class GoodVersionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoodVersionTest, PassesGateAndIsBenchmarked) {
    const auto r = verify(example_dir() + "/versions/" + GetParam());
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto& rec = r.record;
    ASSERT_TRUE(rec.is_object());
    EXPECT_EQ(rec.at("schema_version"), 1);
    EXPECT_EQ(rec.at("status"), "passed");
    EXPECT_EQ(rec.at("gate").at("status"), "pass");
    EXPECT_FALSE(rec.at("gate").at("partial").get<bool>());
    // Per mode: 3 gate shapes with their first distributions in 3 trials, 2 held-out ones with
    // the drawn seed only, and on all 5 one call per further distribution (fwd: 4 of x; bwd:
    // none) with the drawn seed; each case with 2 outputs.
    EXPECT_EQ(rec.at("gate").at("cases").size(), ((3u * 3u + 2u + 5u * 4u) + (3u * 3u + 2u)) * 2u);
    EXPECT_EQ(rec.at("gate").at("seeds").size(), 3u);
    // The draw is recorded: 2 held-out shapes per mode, with their dims and the drawn eps.
    const auto& held_out = rec.at("gate").at("held_out");
    ASSERT_EQ(held_out.size(), 4u) << held_out.dump();
    for (const auto& h : held_out) {
        EXPECT_EQ(h.at("shape").get<std::string>().rfind("heldout_", 0), 0u);
        EXPECT_GE(h.at("dims").at("D").get<int>(), 1);
        if (h.at("mode") == "fwd") {
            EXPECT_NE(h.at("params").at("eps").get<double>(), 1e-6);
        }
    }
    const auto& shapes = rec.at("bench").at("shapes");
    ASSERT_EQ(shapes.size(), 2u * 3u);  // 2 modes x 3 bench shapes
    // Each runner's wall time: the bench's holds every sample it took.
    EXPECT_GT(rec.at("gate").at("wall_s").get<double>(), 0.0);
    double sampled_s = 0;
    for (const auto& s : shapes)
        for (const auto& ms : s.at("samples_ms")) sampled_s += ms.get<double>() * 1e-3;
    EXPECT_GT(rec.at("bench").at("wall_s").get<double>(), sampled_s);
    for (const auto& s : shapes) {
        EXPECT_TRUE(s.at("ok").get<bool>()) << s.dump();
        // The stopping rule's minimum, unless its time cap came first (a busy machine).
        if (s.at("stop_reason") != "time_cap") {
            EXPECT_GE(s.at("n").get<int>(), 10) << s.dump();
        }
        EXPECT_GE(s.at("n").get<int>(), 1);
        EXPECT_GT(s.at("median_ms").get<double>(), 0.0);
        EXPECT_LE(s.at("min_ms").get<double>(), s.at("median_ms").get<double>());
        EXPECT_LE(s.at("p10_ms").get<double>(), s.at("p90_ms").get<double>());
        EXPECT_EQ(s.at("samples_ms").size(), s.at("n").get<std::size_t>());
        EXPECT_GE(s.at("checks_total").get<int>(), 1);
        EXPECT_EQ(s.at("checks_failed").get<int>(), 0);
    }
    EXPECT_EQ(find_check(rec, "timed_output_checks")->at("status"), "pass");
    EXPECT_EQ(find_check(rec, "inputs_unchanged")->at("status"), "pass");
    EXPECT_EQ(find_check(rec, "red_zones")->at("status"), "pass");
    // The versions import nothing suspicious (docs/correctness.md, "imported_symbols"), and a CPU
    // candidate has no kernel census.
    ASSERT_NE(find_check(rec, "imported_symbols"), nullptr);
    EXPECT_EQ(find_check(rec, "imported_symbols")->at("status"), "pass") << rec.at("integrity").dump(2);
    EXPECT_EQ(find_check(rec, "census_vendor_kernels")->at("status"), "skipped");
}

INSTANTIATE_TEST_SUITE_P(Examples, GoodVersionTest,
                         ::testing::Values("v0_naive.cpp", "v1_rowwise.cpp", "v2_streaming.cpp"));

struct broken_case {
    std::string file;
    std::string reason_substring;  // must appear in a failing gate case's reason or the bench error
    std::string failed_check;      // integrity check that must read "fail" ("" = none required)
};

void PrintTo(const broken_case& c, std::ostream* os) { *os << c.file; }

class BrokenCandidateTest : public ::testing::TestWithParam<broken_case> {};

TEST_P(BrokenCandidateTest, IsRejectedForItsOwnReason) {
    const auto& p = GetParam();
    // Only the hang needs a short runner timeout; the others get room for a loaded CI machine.
    const bool hang = p.file == "hang.cpp";
    // stale_after_warmup cheats from its 101st call of a mode on: the bench must get there.
    const auto bench = p.file == "stale_after_warmup.cpp" ? kloop::testing::patient_bench(120) : quick_bench();
    const auto r = verify(example_dir() + "/broken/" + p.file, {"--timeout", hang ? "5" : "120"}, bench);
    ASSERT_EQ(r.exit_code, 3) << r.err << r.out;
    const auto& rec = r.record;
    ASSERT_TRUE(rec.is_object()) << r.out;
    EXPECT_EQ(rec.at("status"), "gate_failed");
    std::string reasons = gate_reasons(rec) + rec.at("reason").get<std::string>();
    EXPECT_NE(reasons.find(p.reason_substring), std::string::npos) << reasons;
    if (!p.failed_check.empty()) {
        const auto* c = find_check(rec, p.failed_check);
        ASSERT_NE(c, nullptr);
        EXPECT_EQ(c->at("status"), "fail") << rec.at("integrity").dump(2);
    }
}

// Candidates that exploit a gate trying only the listed shapes, the listed param value or one
// input distribution: each passes the listed cases and fails only the held-out or adversarial
// ones (gate only; a fixed --seed so the draw is the same on every run).
struct exploit_case {
    std::string file;
    std::string failing_shape;  // a failing case's shape must contain this
};

void PrintTo(const exploit_case& c, std::ostream* os) { *os << c.file; }

class ExploitCandidateTest : public ::testing::TestWithParam<exploit_case> {};

TEST_P(ExploitCandidateTest, FailsOnlyWhereTheGateGoesBeyondTheListedCases) {
    const auto& p = GetParam();
    const auto r = run_kloop({"verify", example_dir(), "--candidate", example_dir() + "/broken/" + p.file, "--json",
                              "--no-bench", "--seed", "20261202"});
    kloop::testing::expect_fails_only_beyond_listed_cases(r, p.failing_shape);
}

INSTANTIATE_TEST_SUITE_P(Examples, ExploitCandidateTest,
                         ::testing::Values(exploit_case{"hardcoded_tail.cpp", "heldout_"},
                                           exploit_case{"hardcoded_eps.cpp", "heldout_"},
                                           exploit_case{"fast_rsqrt.cpp", "[x=normal(0, 1000)]"}));

// Without held-out shapes the hard-coded tail passes: the held-out draw is what rejects it; and
// the same --seed draws the same held-out shapes.
TEST(HeldOutDrawTest, HardCodedTailPassesWithoutHeldOutAndTheDrawReplays) {
    const auto cand = example_dir() + "/broken/hardcoded_tail.cpp";
    const auto off = run_kloop({"verify", example_dir(), "--candidate", cand, "--json", "--no-bench", "--held-out", "0"});
    ASSERT_EQ(off.exit_code, 0) << off.err << off.out;
    EXPECT_TRUE(off.record.at("gate").at("held_out").empty());
    const auto a = run_kloop({"verify", example_dir(), "--candidate", example_dir() + "/versions/v1_rowwise.cpp", "--json",
                              "--no-bench", "--seed", "77", "--held-out", "3", "--mode", "fwd"});
    const auto b = run_kloop({"verify", example_dir(), "--candidate", example_dir() + "/versions/v1_rowwise.cpp", "--json",
                              "--no-bench", "--seed", "77", "--held-out", "3", "--mode", "fwd"});
    ASSERT_EQ(a.exit_code, 0) << a.err << a.out;
    ASSERT_EQ(b.exit_code, 0) << b.err << b.out;
    EXPECT_EQ(a.record.at("gate").at("held_out").size(), 3u);
    EXPECT_EQ(a.record.at("gate").at("held_out"), b.record.at("gate").at("held_out"));
}

INSTANTIATE_TEST_SUITE_P(
    Examples, BrokenCandidateTest,
    ::testing::Values(broken_case{"partial_write.cpp", "NaN", "poison_unwritten_outputs"},
                      broken_case{"wrong_result.cpp", "output '", ""},
                      broken_case{"crash.cpp", "SIGSEGV", ""},
                      broken_case{"abort.cpp", "SIGABRT", ""},
                      broken_case{"hang.cpp", "timed out after 5", ""},
                      broken_case{"cached_output.cpp", "called again with new input values at the same addresses", ""},
                      // Caught in the bench (past its 100 honest calls) or, where the gate makes
                      // that many calls, in the gate: an output is wrong either way.
                      broken_case{"stale_after_warmup.cpp", "output 'y'", ""},
                      broken_case{"input_modified.cpp", "modified input 'x'", "inputs_unchanged"},
                      broken_case{"nonzero_return.cpp", "the candidate returned 1", ""},
                      broken_case{"red_zone_write.cpp", "red zone damaged", "red_zones"}),
    [](const auto& p) { return fs::path(p.param.file).stem().string(); });

TEST(VerifyTest, CompileErrorIsExit4WithDiagnostics) {
    const auto dir = fs::temp_directory_path() / "kloop-it-build-fail";
    fs::create_directories(dir);
    const auto src = dir / "bad.cpp";
    std::ofstream(src) << "#include \"kloop/kernel.h\"\nextern \"C\" int rmsnorm_fwd(const kl_args* a) { return oops; }\n";
    const auto r = verify(src.string());
    EXPECT_EQ(r.exit_code, 4) << r.err;
    ASSERT_TRUE(r.record.is_object());
    EXPECT_EQ(r.record.at("status"), "build_failed");
    EXPECT_NE(r.record.at("build").at("candidate").at("diagnostics").get<std::string>().find("oops"), std::string::npos);
    fs::remove_all(dir);
}

TEST(VerifyTest, MissingEntryPointIsRejectedNamingTheSymbol) {
    const auto dir = fs::temp_directory_path() / "kloop-it-missing-entry";
    fs::create_directories(dir);
    const auto src = dir / "fwd_only.cpp";
    std::ofstream(src) << "#include \"kloop/kernel.h\"\nextern \"C\" int rmsnorm_fwd(const kl_args*) { return 0; }\n";
    const auto r = verify(src.string());
    EXPECT_EQ(r.exit_code, 3) << r.err;
    ASSERT_TRUE(r.record.is_object());
    EXPECT_NE(r.record.at("gate").at("runner_failure").get<std::string>().find("rmsnorm_bwd"), std::string::npos)
        << r.record.at("gate").dump();
    fs::remove_all(dir);
}

TEST(VerifyTest, GateKSelectsShapesAndMarksPartial) {
    const auto r = verify(example_dir() + "/versions/v1_rowwise.cpp", {"--gate-k", "n256", "--mode", "fwd", "--no-bench"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto& gate = r.record.at("gate");
    EXPECT_TRUE(gate.at("partial").get<bool>());
    for (const auto& c : gate.at("cases")) {
        // The listed shape, or the listed shape under one of the spec's declared value distributions.
        const auto shape = c.at("shape").get<std::string>();
        EXPECT_TRUE(shape == "n256_d1024" || shape.rfind("n256_d1024[", 0) == 0) << shape;
        EXPECT_EQ(c.at("mode"), "fwd");
    }
    EXPECT_EQ(r.record.at("bench").at("ran"), false);
}

TEST(VerifyTest, SecondVerifyHitsTheBuildCache) {
    const auto cand = example_dir() + "/versions/v2_streaming.cpp";
    (void)verify(cand, {"--no-bench"});
    const auto r = verify(cand, {"--no-bench"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(r.record.at("build").at("candidate").at("cache_hit").get<bool>());
    EXPECT_TRUE(r.record.at("build").at("reference").at("cache_hit").get<bool>());
}

TEST(VerifyTest, SeedReplayUsesTheGivenSeed) {
    const auto r = verify(example_dir() + "/versions/v1_rowwise.cpp", {"--no-bench", "--seed", "12345"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.record.at("gate").at("seeds").at(2), 12345);
}

TEST(VerifyTest, UsageAndSpecErrorsAreExit2) {
    auto r = run_kloop({"verify", example_dir(), "--candidate", "/no/such/file.cpp"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--candidate"), std::string::npos) << r.err;
    r = run_kloop({"verify", example_dir(), "--candidate", example_dir() + "/versions/v1_rowwise.cpp", "--bogus"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
    r = run_kloop({"verify", "/no/such/op", "--candidate", example_dir() + "/versions/v1_rowwise.cpp"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("op.toml"), std::string::npos) << r.err;
    r = run_kloop({"verify", example_dir(), "--candidate", example_dir() + "/versions/v1_rowwise.cpp", "--mode", "fwdd"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--mode"), std::string::npos) << r.err;
}

// Paths the OS refuses are the user's problem, said as such: exit 2 naming the path, never
// "internal error".
TEST(VerifyTest, HostilePathsAreUsageErrorsNamingThePath) {
    kloop::platform::scoped_temp_dir tmp("kloop-hostile-paths");
    const auto loop = tmp.path() / "loop.cpp";
    std::filesystem::create_symlink(loop, loop);  // a link to itself
    const std::string too_long = "/tmp/" + std::string(5000, 'x') + ".cpp";
    const auto a_file = tmp.path() / "a_file";
    kloop::platform::write_file_atomic(a_file, "x");
    const std::string good = example_dir() + "/versions/v1_rowwise.cpp";
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--candidate", loop.string()}, loop.filename().string()},
        {{"--candidate", too_long}, "xxxx"},
        {{"--candidate", good, "--keep", a_file.string()}, a_file.string()},
        {{"--candidate", good, "--keep", "/proc/self/kloop-keep"}, "/proc/self/kloop-keep"},
        {{"--candidate", good, "--gate-k", std::string(30000, '(') + "n" + std::string(30000, ')')}, "--gate-k"},
    };
    for (const auto& [extra, named] : cases) {
        std::vector<std::string> args = {"verify", example_dir(), "--no-bench"};
        args.insert(args.end(), extra.begin(), extra.end());
        const auto r = run_kloop(args);
        EXPECT_EQ(r.exit_code, 2) << extra.back().substr(0, 80) << ": " << r.err.substr(0, 400);
        EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err.substr(0, 400);
        EXPECT_NE(r.err.find(named), std::string::npos) << r.err.substr(0, 400);
    }
}

TEST(VerifyTest, TextReportShowsEnvironmentGateAndBenchTable) {
    std::vector<std::string> args = {"verify", example_dir(), "--candidate", example_dir() + "/versions/v1_rowwise.cpp"};
    for (const auto& a : quick_bench()) args.push_back(a);
    const auto r = run_kloop(args);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("env: "), std::string::npos);
    EXPECT_NE(r.out.find("kloop 0."), std::string::npos);
    EXPECT_NE(r.out.find("gate: PASS"), std::string::npos);
    // The gate and the bench lines end with their runner's wall time.
    EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(gate: PASS \|[^\n]* \| [0-9]+\.[0-9] s\n)"))) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(bench: ok(, [0-9]+ warnings? \(below\))? \|[^\n]* \| [0-9]+\.[0-9] s\n)")))
        << r.out;
    EXPECT_NE(r.out.find("median_ms"), std::string::npos);
    EXPECT_NE(r.out.find("n4096_d1024"), std::string::npos);
    EXPECT_NE(r.out.find("result: PASSED"), std::string::npos);
}

// A tight time cap ends every shape early — after the five samples the timer cross-check needs:
// each shape the cap ended says so, each with fewer than 10 samples says that too, in the JSON
// record and in the text, and the numbers stay.
TEST(VerifyTest, WeakNumbersCarryTheirWarnings) {
    const std::vector<std::string> args = {"verify", example_dir(), "--candidate", example_dir() + "/versions/v0_naive.cpp",
                                           "--min-samples", "3", "--min-time", "0", "--max-time", "0.001"};
    auto json_args = args;
    json_args.push_back("--json");
    const auto r = run_kloop(json_args);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    int capped = 0;
    for (const auto& s : r.record.at("bench").at("shapes")) {
        std::set<std::string> codes;
        for (const auto& w : s.at("warnings")) {
            codes.insert(w.at("code").get<std::string>());
            EXPECT_FALSE(w.at("message").get<std::string>().empty());
        }
        const bool time_cap = s.at("stop_reason") == "time_cap";
        capped += time_cap ? 1 : 0;
        // The cap ends no series before the timer cross-check has five windows (a lone window
        // on a busy machine may have waited a scheduler slice).
        EXPECT_GE(s.at("n").get<int>(), 5) << s.dump();
        EXPECT_EQ(codes.count("time_cap") == 1, time_cap) << s.dump();
        EXPECT_EQ(codes.count("few_samples") == 1, s.at("n").get<int>() < 10) << s.dump();
        EXPECT_GT(s.at("median_ms").get<double>(), 0.0);  // a warning never removes a number
    }
    EXPECT_GT(capped, 0) << "a 1 ms cap should end some shape (the first samples alone take longer)";
    const auto text = run_kloop(args);
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("warning (time_cap)"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("warnings (below)"), std::string::npos) << text.out;
}


// A process spinning beside the bench (always runnable, so busy in every load sample; one, so the
// runner keeps a core of a two-core machine): the record says the machine was busy, the text
// says so, and --require-quiet refuses the numbers (exit 2) after printing them. Runs alone
// (ctest RUN_SERIAL): it loads the machine on purpose.
TEST(VerifyTest, ABusyMachineIsWarnedAboutAndRequireQuietRefusesIt) {
    const kloop::testing::spinners busy(1);
    std::vector<std::string> args = {"verify", example_dir(), "--candidate", example_dir() + "/versions/v1_rowwise.cpp",
                                     "--mode", "fwd"};
    for (const auto& a : quick_bench()) args.push_back(a);
    auto json_args = args;
    json_args.push_back("--json");
    const auto r = run_kloop(json_args);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto& bench = r.record.at("bench");
    EXPECT_TRUE(bench.at("host_load").at("busy").get<bool>()) << bench.at("host_load").dump();
    EXPECT_GT(bench.at("host_load").at("samples").get<int>(), 0);
    ASSERT_EQ(bench.at("warnings").size(), 1u) << bench.dump();
    EXPECT_EQ(bench.at("warnings").at(0).at("code"), "busy_machine");

    args.push_back("--require-quiet");
    const auto refused = run_kloop(args);
    EXPECT_EQ(refused.exit_code, 2) << refused.err;
    EXPECT_NE(refused.out.find("warning (busy_machine)"), std::string::npos) << refused.out;  // printed first
    EXPECT_NE(refused.err.find("--require-quiet"), std::string::npos) << refused.err;
}
