// Unit under test: examples/rmsnorm-cuda on a real GPU, through the kloop binary — every version
// passes the gate and is timed within physics, every broken candidate is rejected for the
// reason its header names, and a candidate whose kernel lives in a local header goes through
// verify, init, iterate, best and report with that header. Label `gpu`; the binary exits 77 (skipped)
// when no GPU is visible (gpu_copy_test.cpp's main).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "integration/expect_rejected.hpp"
#include "integration/kloop_process.hpp"
#include "integration/local_file_loop.hpp"
#include "platform/file_io.hpp"

using kloop::testing::check_status;
using kloop::testing::quick_bench;
using kloop::testing::run_kloop;

namespace {

std::string example() { return kloop::testing::source_dir() + "/examples/rmsnorm-cuda"; }

kloop::testing::kloop_run verify(const std::string& candidate, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"verify", example(), "--candidate", example() + "/" + candidate, "--json"};
    for (const auto& a : quick_bench()) args.push_back(a);
    args.insert(args.end(), extra.begin(), extra.end());
    return run_kloop(args, 600);
}

}  // namespace

class RmsnormCudaVersionTest : public ::testing::TestWithParam<std::string> {};

// The gate in full (both modes, every gate shape, 3 seeds); the bench on one small and one large
// shape, to keep the suite short.
TEST_P(RmsnormCudaVersionTest, PassesTheGateAndIsTimedWithinPhysics) {
    const auto r = verify("versions/" + GetParam(), {"--shape", "r8192_h1024", "--shape", "r16384_h4096"});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    const auto& rec = r.record;
    ASSERT_TRUE(rec.is_object()) << r.out;
    EXPECT_EQ(rec.at("status"), "passed") << rec.value("reason", "");
    for (const char* name : {"census_kernel_launched", "census_vendor_kernels", "imported_symbols",
                             "poison_unwritten_outputs", "red_zones", "inputs_unchanged", "timed_output_checks"})
        EXPECT_EQ(check_status(rec, name), "pass") << name << "\n" << rec.at("integrity").dump(2);
    const auto& shapes = rec.at("bench").at("shapes");
    ASSERT_EQ(shapes.size(), 2u * 2u);  // fwd, bwd x the two shapes
    for (const auto& s : shapes) {
        EXPECT_TRUE(s.at("ok").get<bool>()) << s.dump();
        EXPECT_GE(s.at("n").get<int>(), 10);
        EXPECT_EQ(s.at("checks_failed").get<int>(), 0) << s.dump();
        // Physics: spec bytes over kloop's L2-cold median cannot beat HBM (H200: 4.8 TB/s).
        EXPECT_LT(s.at("gbps").get<double>(), 5000.0) << s.dump();
    }
}

INSTANTIATE_TEST_SUITE_P(Example, RmsnormCudaVersionTest,
                         ::testing::Values("v0_naive.cu", "v1_rowwise.cu", "v2_fused.cu", "v3_wide.cu", "v4_hybrid.cu"),
                         [](const auto& p) { return p.param.substr(0, p.param.find('_')); });

struct broken_case {
    std::string file;
    std::vector<std::string> extra;    // verify's options beyond the quick bench
    std::string reason_substring;      // in the record's reasons ("" = not asserted)
    std::string failed_check;          // an integrity check that must fail ("" = not asserted)
};

void PrintTo(const broken_case& c, std::ostream* os) { *os << c.file; }

class RmsnormCudaBrokenTest : public ::testing::TestWithParam<broken_case> {};

TEST_P(RmsnormCudaBrokenTest, IsRejectedForItsReason) {
    const auto& p = GetParam();
    kloop::testing::expect_rejected(verify("broken/" + p.file, p.extra), p.reason_substring, p.failed_check);
}

const std::vector<std::string> k_no_bench = {"--no-bench"};

INSTANTIATE_TEST_SUITE_P(
    Example, RmsnormCudaBrokenTest,
    ::testing::Values(
        // Accumulating in bf16: beyond the tolerance on the large gate shapes.
        broken_case{"bf16_accumulation.cu", k_no_bench, "output '", ""},
        // Outputs replayed from a cache keyed on the input pointer: the same-address recheck.
        broken_case{"cached_by_pointer.cu", k_no_bench, "at the same addresses", ""},
        broken_case{"cublas_delegation.cu", k_no_bench, "", "census_vendor_kernels"},
        broken_case{"partial_write.cu", k_no_bench, "NaN", "poison_unwritten_outputs"},
        broken_case{"red_zone_write.cu", k_no_bench, "red zone damaged", "red_zones"},
        // A missing barrier: wrong sums on some rows, or other bits on the determinism re-run.
        broken_case{"race.cu", k_no_bench, "", ""},
        // Its kernels on a stream it never joins: the census on the gate shape that is also
        // benched holds ~80 µs of kernels against a few µs of event time.
        broken_case{"side_stream.cu", {"--mode", "fwd", "--shape", "r16384_h4096"}, "", "census_time_vs_event"}),
    [](const auto& p) {
        const auto& f = p.param.file;
        return f.substr(0, f.find('.'));
    });

// A kernel.cu that only includes its implementation: the header travels with it through the loop,
// and a change to the header alone is a new version (tests/integration/local_file_loop.hpp).
TEST(RmsnormCudaLoopTest, ALocalHeaderTravelsThroughTheLoop) {
    const std::string impl = kloop::platform::read_file(example() + "/versions/v2_fused.cu");
    kloop::testing::local_file_loop p;
    p.example = example();
    p.kernel_name = "kernel.cu";
    p.kernel_text = "// the kernel is in its header\n#include \"rms_impl.cuh\"\n";
    p.local_name = "rms_impl.cuh";
    p.local_text = "#pragma once\n" + impl;
    p.local_text_changed = "#pragma once\n// retuned\n" + impl;
    p.loop_args = quick_bench();
    p.loop_args.insert(p.loop_args.end(), {"--held-out", "0"});
    p.iterate_args = {"--no-profile"};
    p.best_args = {"--allow-unprofiled"};
    p.run = [](const std::vector<std::string>& args) { return run_kloop(args, 900); };
    kloop::testing::expect_local_file_travels_through_the_loop(p);
}
