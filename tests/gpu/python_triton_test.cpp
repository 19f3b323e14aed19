// Unit under test: the Python backend on the GPU — kloop → `<python> -m kloop_worker` with torch
// tensors on CUDA → Triton candidates (examples/rmsnorm-triton): the versions pass the gate and
// are timed with the GPU protocol (CUDA events, L2 flush, NVML clocks) and the kernel census
// (torch.profiler); the broken ones are rejected, the TF32-flipping one by
// numeric_flags_unchanged and the torch-delegating one by census_vendor_kernels; `kloop compare`
// times two Triton versions interleaved; a candidate whose kernels live in a local module goes
// through verify, init, iterate, best and report with it; without a visible GPU the same
// candidate runs under TRITON_INTERPRET=1.
//
// Label `gpu`; every case exits 77 (skipped) unless some interpreter imports torch and triton and
// torch sees a GPU. Interpreters tried: $KLOOP_TEST_PYTHON, the one cmake found
// (cmake/KloopPython.cmake), python3 on PATH. Run: ctest -L gpu -R python
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "integration/expect_rejected.hpp"
#include "integration/kloop_process.hpp"
#include "integration/local_file_loop.hpp"
#include "platform/file_io.hpp"
#include "platform/preflight.hpp"
#include "platform/subprocess.hpp"

using kloop::testing::check_status;
using kloop::testing::find_check;
using kloop::testing::quick_bench;

namespace {

std::string g_python;  // set by main()

std::string example() { return kloop::testing::source_dir() + "/examples/rmsnorm-triton"; }

bool has_torch_triton_gpu(const std::string& py) {
    kloop::platform::process_request req;
    req.argv = {py, "-c", "import sys, torch, triton; sys.exit(0 if torch.cuda.is_available() else 3)"};
    req.timeout_s = 300;
    kloop::platform::posix_command_runner runner;
    return runner.run(req).succeeded();
}

kloop::testing::kloop_run run(const std::vector<std::string>& args,
                              std::vector<std::pair<std::string, std::string>> env = {}) {
    kloop::platform::process_request req;
    req.argv = {std::string(KLOOP_TEST_BINARY_DIR) + "/src/kloop"};
    req.argv.insert(req.argv.end(), args.begin(), args.end());
    req.env_overrides = std::move(env);  // the caller's first: they override the defaults below
    for (const auto& [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"KLOOP_HOME", std::string(KLOOP_TEST_BINARY_DIR) + "/test-home-python-gpu"}, {"KLOOP_PYTHON", g_python}})
        if (std::none_of(req.env_overrides.begin(), req.env_overrides.end(), [&](const auto& e) { return e.first == k; }))
            req.env_overrides.emplace_back(k, v);
    req.timeout_s = 900;
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
    std::vector<std::string> args = {"verify", example(), "--candidate", example() + "/" + candidate, "--json"};
    for (const auto& a : bench) args.push_back(a);
    for (auto& a : extra) args.push_back(std::move(a));
    return run(args, std::move(env));
}

}  // namespace

class TritonVersionTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TritonVersionTest, PassesTheGateAndIsTimedOnTheGpu) {
    const auto r = verify("versions/" + GetParam());
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto& rec = r.record;
    ASSERT_TRUE(rec.is_object()) << r.out;
    EXPECT_EQ(rec.at("status"), "passed") << rec.value("reason", "");
    const auto& build = rec.at("build").at("candidate");
    EXPECT_EQ(build.at("device"), "python");
    EXPECT_EQ(build.at("target"), "torch-cuda");
    EXPECT_NE(build.at("compiler_version").get<std::string>().find("triton"), std::string::npos);
    for (const char* name : {"python_source_screen", "numeric_flags_unchanged", "census_kernel_launched",
                             "census_vendor_kernels", "poison_unwritten_outputs", "red_zones", "inputs_unchanged",
                             "timed_output_checks"})
        EXPECT_EQ(check_status(rec, name), "pass") << name << "\n" << rec.at("integrity").dump(2);
    // The GPU protocol: 2 x L2 flushed per sample (H200: 2 x 60 MB), clocks recorded.
    EXPECT_GE(rec.at("bench").at("evict_bytes").get<std::uint64_t>(), std::uint64_t{2} << 20);
    const auto& shapes = rec.at("bench").at("shapes");
    ASSERT_EQ(shapes.size(), 2u * 3u);
    for (const auto& s : shapes) {
        EXPECT_TRUE(s.at("ok").get<bool>()) << s.dump();
        EXPECT_GE(s.at("n").get<int>(), 10);
        EXPECT_GT(s.at("median_ms").get<double>(), 0.0);
        EXPECT_GE(s.at("checks_total").get<int>(), 1);
        EXPECT_TRUE(s.contains("sm_clock_mhz_median")) << s.dump();
        // Physics: RMSNorm cannot beat HBM (H200: 4.8 TB/s).
        if (s.contains("gbps")) {
            EXPECT_LT(s.at("gbps").get<double>(), 5000.0) << s.dump();
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Example, TritonVersionTest, ::testing::Values("v0_straightforward.py", "v1_fused.py"),
                         [](const auto& p) { return p.param.substr(0, p.param.find('_')); });

struct broken_case {
    std::string file;
    std::string reason_substring;
    std::string failed_check;
};

void PrintTo(const broken_case& c, std::ostream* os) { *os << c.file; }

class TritonBrokenTest : public ::testing::TestWithParam<broken_case> {};

TEST_P(TritonBrokenTest, IsRejected) {
    const auto& p = GetParam();
    kloop::testing::expect_rejected(verify("broken/" + p.file, {"--no-bench"}), p.reason_substring, p.failed_check);
}

INSTANTIATE_TEST_SUITE_P(
    Example, TritonBrokenTest,
    ::testing::Values(broken_case{"wrong_result.py", "output 'y'", ""},
                      broken_case{"partial_write.py", "NaN", "poison_unwritten_outputs"},
                      broken_case{"input_modified.py", "modified input 'x'", "inputs_unchanged"},
                      broken_case{"red_zone_write.py", "red zone damaged", "red_zones"},
                      broken_case{"flips_tf32.py", "", "numeric_flags_unchanged"},
                      broken_case{"torch_delegation.py", "", "census_vendor_kernels"}),
    [](const auto& p) {
        const auto& f = p.param.file;
        return f.substr(0, f.find('.'));
    });

// Exploits of predictable checks (docs/security.md, "Every call alike"), through the bench: each
// is honest in the gate and cheats only in bench calls, and is rejected for its mechanism. Three
// start past their 150th call (more than the gate makes), so the bench must make that many.
struct triton_exploit {
    std::string file;
    std::vector<std::string> options;
    std::string reason_substring;
    std::string failed_check;
};

void PrintTo(const triton_exploit& c, std::ostream* os) { *os << c.file; }

class TritonExploitTest : public ::testing::TestWithParam<triton_exploit> {};

TEST_P(TritonExploitTest, IsRejectedForItsMechanism) {
    const auto& p = GetParam();
    std::vector<std::string> args = {"--mode", "fwd", "--shape", "r8192_h1024"};
    for (const auto& a : p.options) args.push_back(a);
    const bool patient = p.file.find("every_third") != std::string::npos || p.file == "skip_after_first_calls.py";
    kloop::testing::expect_rejected(verify("broken/" + p.file, args, {}, patient ? kloop::testing::patient_bench(400) : quick_bench()),
                                    p.reason_substring, p.failed_check);
}

INSTANTIATE_TEST_SUITE_P(
    Example, TritonExploitTest,
    ::testing::Values(triton_exploit{"skip_after_first_calls.py", {}, "NaN", "timed_output_checks"},
                      triton_exploit{"input_every_third.py", {"--check-every", "0"},
                                     "modified input 'x'", "inputs_unchanged"},
                      triton_exploit{"red_zone_every_third.py", {"--check-every", "0"},
                                     "red zone damaged", "red_zones"},
                      triton_exploit{"fingerprint_cache.py", {"--check-every", "1"}, "timed call", "timed_output_checks"}),
    [](const auto& p) {
        const auto& f = p.param.file;
        return f.substr(0, f.find('.'));
    });

// Correct on every listed case, wrong beyond them: rejected only on the held-out shapes (a fixed
// --seed: its draw for this op is D=4649 and D=5 with eps 3.7e-7 and 1.8e-8, none listed).
class TritonHeldOutExploitTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TritonHeldOutExploitTest, FailsOnlyOnTheHeldOutShapes) {
    kloop::testing::expect_fails_only_beyond_listed_cases(
        verify("broken/" + GetParam(), {"--no-bench", "--seed", "20261202"}), "heldout_");
}

INSTANTIATE_TEST_SUITE_P(Example, TritonHeldOutExploitTest, ::testing::Values("hardcoded_eps.py", "listed_shapes_only.py"),
                         [](const auto& p) { return p.param.substr(0, p.param.find('.')); });

TEST(TritonCompareTest, TwoVersionsAreTimedInterleaved) {
    std::vector<std::string> args = {"compare", example(), "--candidate", example() + "/versions/v1_fused.py", "--base",
                                     example() + "/versions/v0_straightforward.py", "--json"};
    for (const auto& q : quick_bench()) args.push_back(q);
    const auto r = run(args);
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_TRUE(r.record.at("ok").get<bool>()) << r.record.dump(2);
    for (const auto& s : r.record.at("shapes")) {
        EXPECT_TRUE(s.at("ok").get<bool>()) << s.dump();
        std::printf("%s/%s: %s (speedup %.3f)\n", s.at("mode").get<std::string>().c_str(),
                    s.at("shape").get<std::string>().c_str(), s.at("verdict").get<std::string>().c_str(),
                    s.value("speedup", 0.0));
    }
}

// Nsight Compute on a Triton candidate: the worker runs under ncu, one call in the profiler range,
// and the capture holds the Triton kernel of that call (by the name Triton gave it).
TEST(TritonProfileTest, NcuCapturesTheTritonKernelOfOneCall) {
    if (kloop::platform::find_tool("ncu").empty()) GTEST_SKIP() << "no ncu on this machine";
    kloop::platform::scoped_temp_dir out("kloop-gpu-triton-profile");
    const auto r = run({"profile", example(), "--candidate", example() + "/versions/v1_fused.py", "--mode", "fwd",
                        "--set", "targeted", "--held-out", "0", "--out", out.path().string(), "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    ASSERT_EQ(r.record.at("captures").size(), 1u) << r.record.dump(1);
    const auto& cap = r.record.at("captures")[0];
    EXPECT_EQ(cap.at("status"), "captured") << cap.dump(1);
    const auto argv = cap.at("ncu_argv").get<std::vector<std::string>>();
    EXPECT_NE(std::find(argv.begin(), argv.end(), "--clock-control"), argv.end());
    bool fwd_kernel = false;
    for (const auto& k : cap.at("summary").at("kernels")) {
        std::printf("kernel %s\n", k.dump().c_str());
        fwd_kernel = fwd_kernel || k.dump().find("_fwd_kernel") != std::string::npos;
    }
    EXPECT_TRUE(fwd_kernel) << cap.at("summary").dump(1);
}

// The loop with a Triton op on the GPU: init on v0, iterate to v1, best. In a scratch git
// repository (the loop commits each iteration). The Python op on the GPU is profiled as a CUDA op
// is (docs/profiling.md, "Python ops"): where ncu runs, `best` holds v1 to the full-profile rule.
TEST(TritonLoopTest, InitIterateAndBestOnTheGpu) {
    kloop::platform::scoped_temp_dir tmp("kloop-gpu-triton-loop");
    const auto repo = tmp.path() / "repo";
    const auto op = repo / "op";
    std::filesystem::create_directories(repo);
    std::filesystem::copy(example(), op, std::filesystem::copy_options::recursive);
    const auto kernel = op / "kernel.py";
    std::filesystem::copy_file(op / "versions" / "v0_straightforward.py", kernel);
    kloop::platform::posix_command_runner git;
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"init", "-q"}, {"-c", "user.email=t@l", "-c", "user.name=t", "add", "-A"},
             {"-c", "user.email=t@l", "-c", "user.name=t", "commit", "-qm", "start"}}) {
        kloop::platform::process_request req;
        req.argv = {"git", "-C", repo.string()};
        req.argv.insert(req.argv.end(), args.begin(), args.end());
        ASSERT_TRUE(git.run(req).succeeded()) << args.back();
    }
    const auto ws = (repo / "ws").string();
    std::vector<std::string> init = {"init", op.string(), "--candidate", kernel.string(), "--max-iterations", "3",
                                     "--workspace", ws};
    for (const auto& q : quick_bench()) init.push_back(q);
    const auto i = run(init);
    ASSERT_EQ(i.exit_code, 0) << i.err << i.out;
    std::filesystem::copy_file(op / "versions" / "v1_fused.py", kernel, std::filesystem::copy_options::overwrite_existing);
    const auto proposal = tmp.path() / "proposal.md";
    kloop::platform::write_file_atomic(proposal, "Direction: one fused kernel per pass\nExpected: faster on every shape\n\n"
                                                 "## Strategy tags\n- fusion\n");
    // The Python worker runs the candidate beside the reference: unconfined (docs/security.md),
    // so a FASTER iteration is promoted only when asked.
    std::vector<std::string> it = {"iterate", "--workspace", ws, "--candidate", kernel.string(), "--proposal",
                                   proposal.string(), "--allow-unconfined"};
    for (const auto& q : quick_bench()) it.push_back(q);
    const auto v1 = run(it);
    ASSERT_EQ(v1.exit_code, 0) << v1.err << v1.out;
    EXPECT_NE(v1.out.find("v1: "), std::string::npos) << v1.out;
    EXPECT_EQ(v1.out.find("v1: rejected"), std::string::npos) << v1.out;
    const auto best = run({"best", "--workspace", ws, "--json"});
    ASSERT_EQ(best.exit_code, 0) << best.err << best.out;
    ASSERT_TRUE(best.record.is_object()) << best.out;
    EXPECT_FALSE(best.record.at("best").is_null()) << best.record.dump(1);
    std::printf("iterate: %s\nbest: %s\n", v1.out.c_str(), best.record.at("best").dump().c_str());
}

// A kernel.py that only imports its kernels from a local module: the module travels with it
// through the loop, and a change to the module alone is a new version.
TEST(TritonLoopTest, ALocalModuleTravelsThroughTheLoop) {
    const std::string impl = kloop::platform::read_file(example() + "/versions/v1_fused.py");
    kloop::testing::local_file_loop p;
    p.example = example();
    p.kernel_name = "kernel.py";
    p.kernel_text = "from rms_impl import rmsnorm_bwd, rmsnorm_fwd  # noqa: F401\n";
    p.local_name = "rms_impl.py";
    p.local_text = impl;
    p.local_text_changed = "# retuned\n" + impl;
    p.loop_args = quick_bench();
    p.loop_args.insert(p.loop_args.end(), {"--held-out", "0"});
    p.run = [](const std::vector<std::string>& args) { return run(args); };
    kloop::testing::expect_local_file_travels_through_the_loop(p);
}

// Triton's interpreter (3.6) rounds fp32 -> bf16 by truncation, so y (bf16) can miss its tight
// rel_rms bound there (4.06e-3 > 4e-3 was seen on the H200 host); the check here is that the
// whole gate runs under the interpreter and judges every call, and that rstd (f32) passes.
// Through the fork server (its interpreter imported torch and triton before the child turned
// Triton's interpreter on) and without it.
class TritonInterpretTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TritonInterpretTest, WithoutAVisibleGpuTritonRunsInItsInterpreter) {
    const auto r = verify("versions/v0_straightforward.py", {"--no-bench", "--mode", "fwd", "--gate-k", "r512"},
                          {{"CUDA_VISIBLE_DEVICES", ""}, {"KLOOP_PYTHON_FORK_SERVER", GetParam()}});
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err << r.out;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_EQ(r.record.at("build").at("candidate").at("target"), "torch-cpu+TRITON_INTERPRET");
    EXPECT_EQ(r.record.at("gate").at("runner_failure"), "");
    const auto& cases = r.record.at("gate").at("cases");
    // 3 trials x each of the input's distributions x (y, rstd)
    ASSERT_FALSE(cases.empty());
    ASSERT_EQ(cases.size() % (3u * 2u), 0u) << r.record.at("gate").dump(1).substr(0, 6000);
    for (const auto& c : cases) {
        ASSERT_TRUE(c.at("errors").is_object()) << c.dump();
        EXPECT_EQ(c.at("errors").at("nan").get<int>(), 0) << c.dump();
        if (c.at("output") == "rstd") {
            EXPECT_EQ(c.at("errors").at("mismatches").get<int>(), 0) << c.dump();
        }
    }
    EXPECT_EQ(check_status(r.record, "census_kernel_launched"), "skipped");  // no GPU, no census
}

INSTANTIATE_TEST_SUITE_P(ForkServer, TritonInterpretTest, ::testing::Values("1", "0"),
                         [](const auto& p) { return p.param == "1" ? std::string("on") : std::string("off"); });

// No interpreter with torch, triton and a visible GPU: every case is skipped (exit 77). Listing
// works without one, so gtest_discover_tests registers the cases anyway.
int main(int argc, char** argv) {
    bool listing = false;
    for (int i = 1; i < argc; ++i) listing = listing || std::string(argv[i]).rfind("--gtest_list_tests", 0) == 0;
    if (!listing) {
        std::vector<std::string> tried;
        if (const char* p = std::getenv("KLOOP_TEST_PYTHON"); p != nullptr && *p != '\0') tried.emplace_back(p);
        if (std::string c = KLOOP_TEST_PYTHON; !c.empty()) tried.push_back(c);
        tried.emplace_back("python3");
        for (const auto& py : tried)
            if (has_torch_triton_gpu(py)) {
                g_python = py;
                break;
            }
        if (g_python.empty()) {
            std::printf("no Python with torch, triton and a visible GPU (tried");
            for (const auto& t : tried) std::printf(" %s", t.c_str());
            std::printf("): skipping the Python GPU tests\n");
            return 77;
        }
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
