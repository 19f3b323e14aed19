// Unit under test: the Python backend end to end on the CPU — kloop (python "build": snapshot,
// probe, manifest) → `<python> -m kloop_worker` (the runner protocol in Python) → kloop's own
// judgement — on the numpy-only op tests/fixtures/python_numpy: correct candidates in both forms
// pass with statistics, every broken one is rejected for its own reason, a candidate that does
// not import is a failed build, a missing interpreter or a missing numpy is a usage error naming
// it, and `kloop compare` times two Python candidates interleaved. Hostile candidates aimed at the
// bench's checked calls (damage only in calls it guesses unchecked, a cache keyed on a sample of
// the inputs, skipping work when the output is not poison) are rejected or gain nothing.
//
// The interpreter comes from cmake/KloopPython.cmake (KLOOP_TEST_PYTHON): one that imports numpy.
// Without one every case exits 77 (skipped).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "kloop_process.hpp"
#include "platform/file_io.hpp"

namespace fs = std::filesystem;
using kloop::testing::all_reasons;
using kloop::testing::find_check;
using kloop::testing::quick_bench;
using kloop::testing::source_dir;

namespace {

std::string python() { return KLOOP_TEST_PYTHON; }
std::string op_dir() { return source_dir() + "/tests/fixtures/python_numpy"; }

// `kloop <args>` with KLOOP_PYTHON set (unless overridden) and KLOOP_HOME private to these tests.
kloop::testing::kloop_run run(const std::vector<std::string>& args,
                              std::vector<std::pair<std::string, std::string>> env = {}, double timeout_s = 300) {
    kloop::platform::process_request req;
    req.argv = {std::string(KLOOP_TEST_BINARY_DIR) + "/src/kloop"};
    req.argv.insert(req.argv.end(), args.begin(), args.end());
    req.env_overrides = std::move(env);  // the caller's first: they override the defaults below
    for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"KLOOP_HOME", std::string(KLOOP_TEST_BINARY_DIR) + "/test-home-python"}, {"KLOOP_PYTHON", python()}})
        if (std::none_of(req.env_overrides.begin(), req.env_overrides.end(), [&](const auto& e) { return e.first == k; }))
            req.env_overrides.emplace_back(k, v);
    req.timeout_s = timeout_s;
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

kloop::testing::kloop_run verify(const std::string& candidate, std::vector<std::string> extra = {},
                                 std::vector<std::pair<std::string, std::string>> env = {},
                                 const std::vector<std::string>& bench = quick_bench()) {
    std::vector<std::string> args = {"verify", op_dir(), "--candidate", op_dir() + "/" + candidate, "--json"};
    for (const auto& a : bench) args.push_back(a);
    for (auto& a : extra) args.push_back(std::move(a));
    return run(args, std::move(env));
}

fs::path temp_dir(const std::string& name) {
    const auto d = fs::temp_directory_path() / ("kloop-it-python-" + name);
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

}  // namespace

class PythonGoodVersionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PythonGoodVersionTest, PassesGateAndIsBenchmarked) {
    const auto r = verify("versions/" + GetParam());
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto& rec = r.record;
    ASSERT_TRUE(rec.is_object()) << r.out;
    EXPECT_EQ(rec.at("status"), "passed");
    EXPECT_EQ(rec.at("gate").at("status"), "pass");
    // 2 modes x 2 gate shapes x 3 trials, each with 2 outputs
    EXPECT_EQ(rec.at("gate").at("cases").size(), 2u * 2u * 3u * 2u);
    for (const auto& c : rec.at("gate").at("cases")) EXPECT_EQ(c.at("status"), "pass") << c.dump();
    const auto& build = rec.at("build").at("candidate");
    EXPECT_EQ(build.at("device"), "python");
    EXPECT_EQ(build.at("target"), "numpy");
    const auto version = build.at("compiler_version").get<std::string>();
    EXPECT_NE(version.find("numpy"), std::string::npos) << version;
    EXPECT_NE(version.find("Python"), std::string::npos) << version;
    const auto& shapes = rec.at("bench").at("shapes");
    ASSERT_EQ(shapes.size(), 2u);  // 2 modes x 1 bench shape
    for (const auto& s : shapes) {
        EXPECT_TRUE(s.at("ok").get<bool>()) << s.dump();
        // The stopping rule's minimum, unless its time cap (0.3 s here) came first: a candidate in
        // a host process of its own costs a request per call, and a busy machine makes fewer.
        if (s.at("stop_reason") != "time_cap") {
            EXPECT_GE(s.at("n").get<int>(), 10) << s.dump();
        }
        EXPECT_GE(s.at("n").get<int>(), 3) << s.dump();
        EXPECT_GT(s.at("median_ms").get<double>(), 0.0);
        EXPECT_GE(s.at("checks_total").get<int>(), 1);
        EXPECT_EQ(s.at("checks_failed").get<int>(), 0);
        EXPECT_FALSE(s.at("stop_reason").get<std::string>().empty());
    }
    for (const char* name : {"poison_unwritten_outputs", "red_zones", "inputs_unchanged", "timed_output_checks",
                             "seed_drawn_at_check_time", "python_source_screen"}) {
        const auto* c = find_check(rec, name);
        ASSERT_NE(c, nullptr) << name;
        EXPECT_EQ(c->at("status"), "pass") << name << ": " << c->dump();
    }
    EXPECT_EQ(find_check(rec, "numeric_flags_unchanged")->at("status"), "skipped");  // numpy: no flags
    EXPECT_EQ(find_check(rec, "census_kernel_launched")->at("status"), "skipped");    // no GPU census
    EXPECT_EQ(find_check(rec, "imported_symbols"), nullptr);  // no shared object
}

INSTANTIATE_TEST_SUITE_P(Fixture, PythonGoodVersionTest, ::testing::Values("v0_numpy.py", "v1_seed_form.py"),
                         [](const auto& p) { return fs::path(p.param).stem().string(); });

struct broken_case {
    std::string file;
    std::string reason_substring;  // in a failing case's reason, the gate's runner failure or the record's reason
    std::string failed_check;      // integrity check that must read "fail" ("" = none required)
};

void PrintTo(const broken_case& c, std::ostream* os) { *os << c.file; }

class PythonBrokenCandidateTest : public ::testing::TestWithParam<broken_case> {};

TEST_P(PythonBrokenCandidateTest, IsRejectedForItsOwnReason) {
    const auto& p = GetParam();
    const bool hang = p.file == "hang.py";
    // The every-third candidates damage only past their 24th call: the bench must get there.
    const bool patient = p.file == "red_zone_every_third.py" || p.file == "input_every_third.py";
    const auto r = verify("broken/" + p.file, {"--timeout", hang ? "5" : "120"}, {},
                          patient ? kloop::testing::patient_bench(40) : quick_bench());
    ASSERT_EQ(r.exit_code, 3) << r.err << r.out;
    const auto& rec = r.record;
    ASSERT_TRUE(rec.is_object()) << r.out;
    EXPECT_EQ(rec.at("status"), "gate_failed");
    const auto reasons = all_reasons(rec);
    EXPECT_NE(reasons.find(p.reason_substring), std::string::npos) << reasons;
    if (!p.failed_check.empty()) {
        const auto* c = find_check(rec, p.failed_check);
        ASSERT_NE(c, nullptr) << p.failed_check;
        EXPECT_EQ(c->at("status"), "fail") << rec.at("integrity").dump(2);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Fixture, PythonBrokenCandidateTest,
    ::testing::Values(broken_case{"wrong_result.py", "output 'y'", ""},
                      broken_case{"partial_write.py", "NaN", "poison_unwritten_outputs"},
                      broken_case{"red_zone_write.py", "red zone damaged", "red_zones"},
                      broken_case{"input_modified.py", "modified input 'x'", "inputs_unchanged"},
                      broken_case{"exception.py", "KeyError: 'bf16' (at exception.py:7 in rmsnorm_bwd)", ""},
                      broken_case{"hang.py", "timed out after 5", ""},
                      broken_case{"cached_by_pointer.py", "called again with new input values at the same addresses", ""},
                      broken_case{"timer.py", "time.perf_counter", "python_source_screen"},
                      // Damage done only in calls past the gate's count, never in a checked one
                      // by design: caught by the verification after every bench call.
                      broken_case{"red_zone_every_third.py", "red zone damaged", "red_zones"},
                      broken_case{"input_every_third.py", "modified input 'x'", "inputs_unchanged"},
                      // The candidate runs in its own host process (docs/python.md): what it
                      // patches, forges or leaves to a thread does not reach the checker.
                      broken_case{"patch_reference.py", "output 'y'", ""},
                      broken_case{"patch_timer.py", "timer_cross_check", "timer_cross_check"},
                      broken_case{"forge_results.py", "the candidate host broke the protocol", ""},
                      broken_case{"background_thread_work.py", "NaN", "poison_unwritten_outputs"},
                      // The host's confinement: a signal to kloop is the host's own death.
                      broken_case{"kill_orchestrator.py", "killed by SIGSYS", ""}),
    [](const auto& p) { return fs::path(p.param.file).stem().string(); });

// A native candidate of a Python op: C++ built by kloop's C++ builder (its cache), loaded by the
// worker's candidate host through the C ABI and gated on the worker's buffers like a module is;
// its imported symbols are checked in place of the source screen.
TEST(PythonNativeCandidateTest, PassesTheGateThroughTheCAbi) {
    const auto r = verify("versions/v2_native.cpp", {"--held-out", "2"});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto& rec = r.record;
    EXPECT_EQ(rec.at("status"), "passed");
    EXPECT_EQ(rec.at("gate").at("status"), "pass");
    for (const auto& c : rec.at("gate").at("cases")) EXPECT_EQ(c.at("status"), "pass") << c.dump();
    const auto& build = rec.at("build").at("candidate");
    EXPECT_EQ(build.at("device"), "python");
    EXPECT_EQ(build.at("target"), "numpy");  // the worker's tensors
    const auto version = build.at("compiler_version").get<std::string>();
    EXPECT_NE(version.find("Python"), std::string::npos) << version;  // the C++ compiler's line, then the worker's
    const auto manifest = nlohmann::json::parse(kloop::platform::read_file(build.at("library").get<std::string>()));
    EXPECT_TRUE(manifest.at("native").get<bool>());
    EXPECT_EQ(manifest.at("native_sha256").get<std::string>().size(), 64u);
    EXPECT_EQ(fs::path(manifest.at("snapshot").get<std::string>()).filename(), "v2_native.cpp.so");
    for (const auto& s : rec.at("bench").at("shapes")) {
        EXPECT_TRUE(s.at("ok").get<bool>()) << s.dump();
        EXPECT_EQ(s.at("checks_failed").get<int>(), 0) << s.dump();
    }
    for (const char* name : {"poison_unwritten_outputs", "red_zones", "inputs_unchanged", "timed_output_checks",
                             "imported_symbols"}) {
        const auto* c = find_check(rec, name);
        ASSERT_NE(c, nullptr) << name;
        EXPECT_EQ(c->at("status"), "pass") << name << ": " << c->dump();
    }
    EXPECT_EQ(find_check(rec, "python_source_screen"), nullptr);  // no module to screen
    // Built once: the second run hits both the native build and the Python one.
    const auto again = verify("versions/v2_native.cpp", {"--no-bench"});
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_TRUE(again.record.at("build").at("candidate").at("cache_hit").get<bool>());
}

TEST(PythonNativeCandidateTest, IsJudgedLikeAnyCandidate) {
    const auto wrong = verify("broken/native_wrong_result.cpp", {"--no-bench"});
    ASSERT_EQ(wrong.exit_code, 3) << wrong.err << wrong.out;
    EXPECT_NE(all_reasons(wrong.record).find("output 'y'"), std::string::npos) << all_reasons(wrong.record);
    // Correct outputs, but a clock of its own: the library's imports fail it.
    const auto timer = verify("broken/native_timer.cpp", {"--no-bench"});
    ASSERT_EQ(timer.exit_code, 3) << timer.err << timer.out;
    const auto* c = find_check(timer.record, "imported_symbols");
    ASSERT_NE(c, nullptr) << timer.out;
    EXPECT_EQ(c->at("status"), "fail") << c->dump();
    EXPECT_NE(c->at("detail").get<std::string>().find("clock_gettime"), std::string::npos) << c->dump();
}

TEST(PythonNativeCandidateTest, ACompileErrorIsAFailedBuildWithTheCompilersWords) {
    const auto dir = temp_dir("native-compile-error");
    fs::copy(op_dir(), dir, fs::copy_options::recursive);
    kloop::platform::write_file_atomic(dir / "bad.cpp", "extern \"C\" int rmsnorm_fwd(const kl_args* a) { return undeclared_name; }\n");
    const auto r = run({"verify", dir.string(), "--candidate", (dir / "bad.cpp").string(), "--json", "--no-bench"});
    EXPECT_EQ(r.exit_code, 4) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_EQ(r.record.at("status"), "build_failed") << r.out;
    const auto diag = r.record.at("build").at("candidate").at("diagnostics").get<std::string>();
    EXPECT_NE(diag.find("undeclared_name"), std::string::npos) << diag;
    fs::remove_all(dir);
}

TEST(PythonVerifyTest, HangNamesTheCallInFlight) {
    const auto r = verify("broken/hang.py", {"--timeout", "5", "--mode", "fwd", "--gate-k", "n64", "--no-bench"});
    ASSERT_EQ(r.exit_code, 3) << r.err << r.out;
    EXPECT_NE(all_reasons(r.record).find("timed out after 5.0 s in the candidate"), std::string::npos)
        << all_reasons(r.record);
}

TEST(PythonVerifyTest, ImportErrorIsAFailedBuildWithTheError) {
    const auto r = verify("broken/import_error.py");
    EXPECT_EQ(r.exit_code, 4) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_EQ(r.record.at("status"), "build_failed");
    const auto diag = r.record.at("build").at("candidate").at("diagnostics").get<std::string>();
    EXPECT_NE(diag.find("SyntaxError"), std::string::npos) << diag;
}

TEST(PythonVerifyTest, MissingInterpreterIsAUsageErrorNamingIt) {
    const auto r = verify("versions/v0_numpy.py", {}, {{"KLOOP_PYTHON", "/nonexistent/kloop-test/python3"}});
    EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
    EXPECT_NE(r.err.find("/nonexistent/kloop-test/python3"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("KLOOP_PYTHON"), std::string::npos) << r.err;
}

TEST(PythonVerifyTest, InterpreterWithoutNumpyIsAUsageErrorNamingNumpy) {
    // The same interpreter without its site packages (-S): numpy cannot be imported.
    const auto dir = temp_dir("no-numpy");
    const auto wrapper = dir / "python-no-site";
    {
        std::ofstream f(wrapper);
        f << "#!/bin/sh\nexec " << python() << " -S \"$@\"\n";
    }
    fs::permissions(wrapper, fs::perms::owner_all);
    const auto r = verify("versions/v0_numpy.py", {}, {{"KLOOP_PYTHON", wrapper.string()}});
    if (r.exit_code == 0) GTEST_SKIP() << "numpy is importable without site packages here";
    EXPECT_EQ(r.exit_code, 2) << r.err << r.out;
    EXPECT_NE(r.err.find("numpy"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(wrapper.string()), std::string::npos) << r.err;
    fs::remove_all(dir);
}

TEST(PythonVerifyTest, CudaDeviceWithoutTorchNamesTorch) {
    // The fixture asks for numpy; the same op with [python] device = "cuda" needs torch.
    const auto dir = temp_dir("cuda-device");
    for (const auto& e : fs::directory_iterator(op_dir()))
        fs::copy(e.path(), dir / e.path().filename(), fs::copy_options::recursive);
    std::string spec = kloop::platform::read_file(dir / "op.toml");
    const std::string from = "device = \"cpu\"";
    spec.replace(spec.find(from), from.size(), "device = \"cuda\"");
    kloop::platform::write_file_atomic(dir / "op.toml", spec);
    const auto probe = run({"verify", dir.string(), "--candidate", (dir / "versions/v0_numpy.py").string(), "--json",
                            "--no-bench"});
    std::FILE* has_torch = ::popen((python() + " -c 'import torch' 2>/dev/null").c_str(), "r");
    const int torch_rc = has_torch ? ::pclose(has_torch) : 1;
    if (torch_rc == 0) GTEST_SKIP() << "torch is installed: the missing-module message cannot be tested";
    EXPECT_EQ(probe.exit_code, 2) << probe.err << probe.out;
    EXPECT_NE(probe.err.find("torch"), std::string::npos) << probe.err;
    fs::remove_all(dir);
}

TEST(PythonVerifyTest, UnknownDeviceIsASpecError) {
    const auto dir = temp_dir("bad-device");
    for (const auto& e : fs::directory_iterator(op_dir()))
        fs::copy(e.path(), dir / e.path().filename(), fs::copy_options::recursive);
    std::string spec = kloop::platform::read_file(dir / "op.toml");
    const std::string from = "device = \"cpu\"";
    spec.replace(spec.find(from), from.size(), "device = \"cpuu\"");
    kloop::platform::write_file_atomic(dir / "op.toml", spec);
    const auto r = run({"verify", dir.string(), "--candidate", (dir / "versions/v0_numpy.py").string()});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("python.device"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("did you mean 'cpu'"), std::string::npos) << r.err;
    fs::remove_all(dir);
}

TEST(PythonVerifyTest, BuildIsCachedByContent) {
    const auto first = verify("versions/v0_numpy.py", {"--no-bench"});
    ASSERT_EQ(first.exit_code, 0) << first.err;
    const auto second = verify("versions/v0_numpy.py", {"--no-bench"});
    ASSERT_EQ(second.exit_code, 0) << second.err;
    const auto& b = second.record.at("build").at("candidate");
    EXPECT_TRUE(b.at("cache_hit").get<bool>());
    // The library is the manifest; the worker imports the snapshot beside it.
    const fs::path manifest = b.at("library").get<std::string>();
    EXPECT_EQ(manifest.filename(), "manifest.json");
    EXPECT_TRUE(fs::exists(manifest.parent_path() / "v0_numpy.py"));
    const auto triton_of = [](const nlohmann::json& build) {
        const auto m = nlohmann::json::parse(kloop::platform::read_file(build.at("library").get<std::string>()));
        return fs::path(m.at("triton_cache_dir").get<std::string>());
    };
    const fs::path triton = triton_of(b);
    EXPECT_EQ(triton.filename(), "triton");
    EXPECT_EQ(triton.parent_path().parent_path().filename(), "python-jit");
    // The same bytes at another path (as the loop's snapshot of a candidate): an entry of their
    // own, the same JIT caches.
    const auto dir = temp_dir("build-jit");
    fs::copy_file(fs::path(op_dir()) / "versions" / "v0_numpy.py", dir / "v0_numpy.py");
    const auto moved = run({"verify", op_dir(), "--candidate", (dir / "v0_numpy.py").string(), "--json", "--no-bench"});
    ASSERT_EQ(moved.exit_code, 0) << moved.err;
    const auto& mb = moved.record.at("build").at("candidate");
    EXPECT_NE(mb.at("library"), b.at("library"));
    EXPECT_EQ(triton_of(mb), triton);
    fs::remove_all(dir);
    // Another candidate gets another entry and other JIT caches.
    const auto other = verify("versions/v1_seed_form.py", {"--no-bench"});
    ASSERT_EQ(other.exit_code, 0) << other.err;
    const auto& ob = other.record.at("build").at("candidate");
    EXPECT_NE(ob.at("library"), b.at("library"));
    EXPECT_NE(triton_of(ob), triton);
}

TEST(PythonVerifyTest, AChangedLocalModuleIsANewBuild) {
    const auto dir = temp_dir("build-modules");
    fs::copy(op_dir(), dir, fs::copy_options::recursive);
    const auto kernel = dir / "kernel.py";
    kloop::platform::write_file_atomic(kernel, "from helpers import rmsnorm_bwd, rmsnorm_fwd  # noqa: F401\n");
    kloop::platform::write_file_atomic(dir / "helpers.py", kloop::platform::read_file(dir / "versions" / "v0_numpy.py"));
    const std::vector<std::string> args = {"verify", dir.string(), "--candidate", kernel.string(), "--json", "--no-bench",
                                           "--held-out", "0"};
    const auto first = run(args);
    ASSERT_EQ(first.exit_code, 0) << first.err;
    const auto again = run(args);
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_TRUE(again.record.at("build").at("candidate").at("cache_hit").get<bool>());
    // Only the module changes: the build key covers it, so the probe imports the new one. (Text no
    // earlier run wrote: the build cache outlives the test.)
    const std::string stamp = std::to_string(::getpid()) + "-" +
                              std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    kloop::platform::write_file_atomic(dir / "helpers.py", "# retuned " + stamp + "\n" +
                                                               kloop::platform::read_file(dir / "versions" / "v0_numpy.py"));
    const auto changed = run(args);
    ASSERT_EQ(changed.exit_code, 0) << changed.err;
    EXPECT_FALSE(changed.record.at("build").at("candidate").at("cache_hit").get<bool>());
    EXPECT_NE(changed.record.at("build").at("candidate").at("library"), again.record.at("build").at("candidate").at("library"));
    fs::remove_all(dir);
}

TEST(PythonCompareTest, TwoPythonCandidatesAreTimedInterleaved) {
    std::vector<std::string> args = {"compare", op_dir(), "--candidate", op_dir() + "/versions/v1_seed_form.py",
                                     "--base", op_dir() + "/versions/v0_numpy.py", "--json"};
    for (const auto& q : quick_bench()) args.push_back(q);
    const auto r = run(args);
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_EQ(r.record.at("base").at("gate"), "pass");
    EXPECT_EQ(r.record.at("candidate").at("gate"), "pass");
    EXPECT_TRUE(r.record.at("ok").get<bool>()) << r.record.dump(2);
    for (const auto& s : r.record.at("shapes")) {
        EXPECT_TRUE(s.at("ok").get<bool>()) << s.dump();
        // The stopping rule's minimum, unless the item's time cap came first (a busy machine).
        if (s.at("base_stop_reason") != "time_cap" && s.at("candidate_stop_reason") != "time_cap") {
            EXPECT_GE(s.at("base").at("n").get<int>(), 10) << s.dump();
            EXPECT_GE(s.at("candidate").at("n").get<int>(), 10) << s.dump();
        }
        EXPECT_GE(s.at("base").at("n").get<int>(), 3) << s.dump();
        EXPECT_FALSE(s.at("verdict").get<std::string>().empty());
    }
}

// A cache keyed on a sample of 64 elements per input passes the gate (every value changes there);
// every bench call changes a few scattered elements, which the key misses, and the checked calls
// get its stale outputs. --check-every 1: the first four samples are checked, and more at 4/(s + 1).
TEST(PythonHostileCandidateTest, FingerprintCacheIsRejectedByAScatteredChange) {
    const auto r = verify("broken/fingerprint_cache.py", {"--check-every", "1", "--mode", "fwd"});
    ASSERT_EQ(r.exit_code, 3) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_EQ(r.record.at("status"), "gate_failed");
    EXPECT_EQ(r.record.at("gate").at("status"), "pass");  // the gate cannot see it
    const auto reasons = all_reasons(r.record);
    EXPECT_NE(reasons.find("output 'y'"), std::string::npos) << reasons;
    EXPECT_NE(reasons.find("timed calls checked failed"), std::string::npos) << reasons;
    EXPECT_EQ(find_check(r.record, "timed_output_checks")->at("status"), "fail");
}

namespace {

// A/B of a hostile fixture against v0: the exploit gains nothing when it never gets to skip work.
void expect_no_gain_in_an_ab(const std::string& fixture) {
    std::vector<std::string> args = {"compare", op_dir(), "--candidate", op_dir() + "/broken/" + fixture,
                                     "--base", op_dir() + "/versions/v0_numpy.py", "--mode", "fwd", "--json"};
    for (const auto& q : quick_bench()) args.push_back(q);
    const auto r = run(args);
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    ASSERT_FALSE(r.record.at("shapes").empty());
    for (const auto& s : r.record.at("shapes")) {
        ASSERT_TRUE(s.at("ok").get<bool>()) << s.dump();
        EXPECT_LT(s.at("speedup").get<double>(), 2.0) << s.dump();
    }
}

}  // namespace

// Skipping the work whenever the output is not poison won the A/B by ~15x when outputs were
// poisoned only before checked calls (the rest still held the last answer). Every call now
// sees poison, so it always computes: it is timed as what it then is, the correct v0.
TEST(PythonHostileCandidateTest, SkippingUnlessPoisonedGainsNothingInAnAB) {
    expect_no_gain_in_an_ab("skips_unless_poisoned.py");
}

// Skipping the work whenever a set's inputs are those of its last use again: when only checked
// calls got changed inputs, that skipped every unchecked call. Every call now renews a few
// elements, so it never skips and is timed as the correct v0 it then is.
TEST(PythonHostileCandidateTest, SkippingWhenInputsRepeatGainsNothingInAnAB) {
    expect_no_gain_in_an_ab("skips_when_inputs_repeat.py");
}

// No interpreter with numpy: every case is skipped (ctest SKIP_RETURN_CODE 77). Listing works
// without one, so gtest_discover_tests registers the cases anyway.
int main(int argc, char** argv) {
    bool listing = false;
    for (int i = 1; i < argc; ++i) listing = listing || std::string(argv[i]).rfind("--gtest_list_tests", 0) == 0;
    if (!listing && python().empty()) {
        std::printf("no Python interpreter with numpy (see cmake/KloopPython.cmake): skipping the Python tests\n");
        return 77;
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}

// --max-memory-mib reaches a Python worker on the CPU and the host it forks: a candidate that
// allocates 1 GiB fails its allocation (MemoryError) under 256 MiB, and passes under the default.
TEST(PythonVerifyTest, TheMemoryLimitReachesTheCandidateHost) {
    const std::vector<std::string> gate = {"--mode", "fwd", "--gate-k", "n64", "--no-bench"};
    auto limited = gate;
    limited.insert(limited.end(), {"--max-memory-mib", "256"});
    const auto r = verify("broken/hog_memory.py", limited);
    ASSERT_EQ(r.exit_code, 3) << r.err << r.out;
    EXPECT_NE(all_reasons(r.record).find("MemoryError"), std::string::npos) << all_reasons(r.record);
    const auto ok = verify("broken/hog_memory.py", gate);
    EXPECT_EQ(ok.exit_code, 0) << ok.err << ok.out;
}

// A Python candidate that imports a module beside it: init and iterate stage and snapshot the
// module with it (the iteration imports it from its own folder), and a change to the module alone
// is a new version with the same candidate hash and other sources.
TEST(PythonLoopTest, LocalModulesTravelWithTheCandidate) {
    const auto dir = temp_dir("loop-modules");
    const auto op = dir / "op";
    fs::copy(op_dir(), op, fs::copy_options::recursive);
    const auto kernel = op / "kernel.py";
    kloop::platform::write_file_atomic(kernel, "from helpers import rmsnorm_bwd, rmsnorm_fwd  # noqa: F401\n");
    kloop::platform::write_file_atomic(op / "helpers.py", kloop::platform::read_file(op / "versions" / "v0_numpy.py"));
    const auto ws = dir / "ws";
    std::vector<std::string> quick = quick_bench();
    quick.insert(quick.end(), {"--held-out", "0"});
    std::vector<std::string> init = {"init", op.string(), "--candidate", kernel.string(), "--max-iterations", "3",
                                     "--workspace", ws.string()};
    init.insert(init.end(), quick.begin(), quick.end());
    const auto r0 = run(init);
    ASSERT_EQ(r0.exit_code, 0) << r0.err << r0.out;
    const auto v0 = nlohmann::json::parse(kloop::platform::read_file(ws / "iter_v0" / "benchmark_result.json")).at("iteration");
    EXPECT_EQ(v0.at("local_files"), nlohmann::json::array({"helpers.py"}));
    EXPECT_TRUE(fs::is_regular_file(ws / "iter_v0" / "helpers.py"));

    kloop::platform::write_file_atomic(op / "helpers.py",
                                       "# retuned\n" + kloop::platform::read_file(op / "versions" / "v0_numpy.py"));
    const auto proposal = dir / "proposal.md";
    kloop::platform::write_file_atomic(proposal, "Direction: a module-only change\nExpected: nothing moves\n\n"
                                                 "## Strategy tags\n- module\n");
    std::vector<std::string> iterate = {"iterate", "--workspace", ws.string(), "--proposal", proposal.string()};
    iterate.insert(iterate.end(), quick.begin(), quick.end());
    const auto r1 = run(iterate);
    ASSERT_EQ(r1.exit_code, 0) << r1.err << r1.out;
    const auto v1 = nlohmann::json::parse(kloop::platform::read_file(ws / "iter_v1" / "benchmark_result.json")).at("iteration");
    EXPECT_NE(v1.at("status"), "rejected") << v1.dump(1);
    EXPECT_EQ(kloop::platform::read_file(ws / "iter_v1" / "helpers.py").rfind("# retuned\n", 0), 0u);
    EXPECT_EQ(v1.at("candidate_sha256"), v0.at("candidate_sha256"));
    EXPECT_NE(v1.at("sources_sha256"), v0.at("sources_sha256"));
    fs::remove_all(dir);
}
