// Unit under test: backend/cuda/nvcc_builder — the nvcc command line (target, defaults the spec
// may override, -lineinfo, -Xptxas -v), the ptxas report in the record, and the cache: a second
// build spawns nothing, a change of flags or arch suffix rebuilds. A fake nvcc (a shell script
// that writes the outputs and prints recorded ptxas lines) keeps this GPU- and toolkit-free; one
// case runs the real nvcc when it is installed.
#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "backend/cuda/nvcc_builder.hpp"
#include "backend/cuda/ptxas_report.hpp"
#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"
#include "support/nvcc_installed.hpp"

namespace fs = std::filesystem;
namespace kp = kloop::platform;
namespace kc = kloop::backend::cuda;

namespace {

class counting_runner final : public kp::command_runner_base {
public:
    int count = 0;
    std::vector<std::vector<std::string>> seen;

protected:
    kp::process_result do_run(const kp::process_request& r) override {
        ++count;
        seen.push_back(r.argv);
        return m_inner.run(r);
    }

private:
    kp::posix_command_runner m_inner;
};

// A stand-in for nvcc: --version prints nvcc's banner; a compile writes -o and -MF and prints
// ptxas -v lines on stderr, like nvcc does.
const char* k_fake_nvcc = R"(#!/bin/sh
if [ "$1" = "--version" ]; then
  echo "nvcc: NVIDIA (R) Cuda compiler driver"
  echo "Cuda compilation tools, release 13.0, V13.0.88"
  exit 0
fi
out=""; dep=""; src=""; prev=""
for a in "$@"; do
  case "$prev" in -o) out="$a";; -MF) dep="$a";; esac
  prev="$a"; src="$a"
done
grep -q FAIL_ME "$src" && { echo "$src(1): error: FAIL_ME found" >&2; exit 1; }
printf 'fake library\n' > "$out"
printf '%s : %s\n' "$out" "$src" > "$dep"
echo "ptxas info    : Compiling entry function '_Z4copyPKfPf' for 'sm_90'" >&2
echo "ptxas info    : Function properties for _Z4copyPKfPf" >&2
echo "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" >&2
echo "ptxas info    : Used 12 registers, used 0 barriers, 1024 bytes smem" >&2
exit 0
)";

class NvccBuilderTest : public ::testing::Test {
protected:
    void SetUp() override {
        m_nvcc = m_dir.path() / "bin" / "nvcc";
        kp::write_file_atomic(m_nvcc, k_fake_nvcc);
        ::chmod(m_nvcc.c_str(), 0755);
        kp::write_file_atomic(m_dir.path() / "src" / "copy.cu", "// a candidate\n");
    }

    kc::nvcc_request request() const {
        kc::nvcc_request r;
        r.source = m_dir.path() / "src" / "copy.cu";
        r.abi_include_dir = fs::path(KLOOP_TEST_SOURCE_DIR) / "include";
        r.cache_dir = m_dir.path() / "cache";
        r.compiler = m_nvcc.string();
        r.timeout_s = 60;
        return r;
    }

    static bool has(const std::vector<std::string>& argv, const std::string& a) {
        return std::find(argv.begin(), argv.end(), a) != argv.end();
    }

    kp::scoped_temp_dir m_dir{"kloop-nvcc-builder"};
    fs::path m_nvcc;
    counting_runner m_runner;
};

}  // namespace

TEST(NvccArgvTest, DefaultsTargetAndReport) {
    kc::nvcc_request r;
    r.flags = {"--expt-relaxed-constexpr"};
    const auto argv = kc::nvcc_argv("/cuda/bin/nvcc", r, "/abi", {"/cutlass/include", "/cutlass/tools/util/include"},
                                    "/ops/copy/copy.cu", "/cache/d.d", "/cache/lib.so.tmp");
    const std::vector<std::string> expected{
        "/cuda/bin/nvcc", "--expt-relaxed-constexpr", "-std=c++17", "-O3", "-lineinfo", "-shared", "-Xcompiler", "-fPIC",
        "-arch=sm_90", "-cudart", "shared", "-Xptxas", "-v", "-I/abi", "-I/cutlass/include", "-I/cutlass/tools/util/include",
        "-I/ops/copy", "-MD", "-MF", "/cache/d.d", "-o", "/cache/lib.so.tmp", "/ops/copy/copy.cu"};
    EXPECT_EQ(argv, expected);
}

TEST(NvccArgvTest, ArchSuffixUsesGencode) {
    kc::nvcc_request r;
    r.compute_capability = 90;
    r.arch_suffix = "a";
    const auto argv = kc::nvcc_argv("nvcc", r, "/abi", {}, "/x/k.cu", "/d", "/o");
    EXPECT_NE(std::find(argv.begin(), argv.end(), "-gencode=arch=compute_90a,code=sm_90a"), argv.end());
    EXPECT_EQ(std::find(argv.begin(), argv.end(), "-arch=sm_90"), argv.end());
    r.compute_capability = 100;
    r.arch_suffix = "";
    const auto b = kc::nvcc_argv("nvcc", r, "/abi", {}, "/x/k.cu", "/d", "/o");
    EXPECT_NE(std::find(b.begin(), b.end(), "-arch=sm_100"), b.end());
}

TEST(NvccArgvTest, SpecFlagsWin) {
    kc::nvcc_request r;
    r.flags = {"-std=c++20", "-O2", "-gencode=arch=compute_80,code=sm_80"};
    const auto argv = kc::nvcc_argv("nvcc", r, "/abi", {}, "/x/k.cu", "/d", "/o");
    auto count_prefix = [&](const std::string& p) {
        return std::count_if(argv.begin(), argv.end(), [&](const std::string& a) { return a.rfind(p, 0) == 0; });
    };
    EXPECT_EQ(count_prefix("-std"), 1);
    EXPECT_EQ(count_prefix("-O"), 1);
    EXPECT_EQ(count_prefix("-arch"), 0);
    EXPECT_EQ(count_prefix("-lineinfo"), 1);  // always
    EXPECT_EQ(count_prefix("-Xptxas"), 1);
}

TEST(NvccArgvTest, SharedCudartWithRpath) {
    kc::nvcc_request r;
    r.cudart_dir = "/usr/local/cuda-13.0/lib64";
    const auto argv = kc::nvcc_argv("nvcc", r, "/abi", {}, "/x/k.cu", "/d", "/o");
    const std::vector<std::string> part{"-cudart", "shared", "-Xlinker", "-rpath", "-Xlinker", "/usr/local/cuda-13.0/lib64"};
    EXPECT_NE(std::search(argv.begin(), argv.end(), part.begin(), part.end()), argv.end());
    r.flags = {"-cudart=static"};
    const auto b = kc::nvcc_argv("nvcc", r, "/abi", {}, "/x/k.cu", "/d", "/o");
    EXPECT_EQ(std::find(b.begin(), b.end(), "shared"), b.end());
}

TEST(NvccArgvTest, TargetNames) {
    EXPECT_EQ(kc::target_name(90, ""), "sm_90");
    EXPECT_EQ(kc::target_name(90, "a"), "sm_90a");
    EXPECT_THROW((void)kc::target_name(90, "b"), kloop::usage_error);
    EXPECT_THROW((void)kc::target_name(35, ""), kloop::usage_error);
}

TEST(NvccArgvTest, VersionLine) {
    EXPECT_EQ(kc::pick_nvcc_version_line("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
                                         "Built on Wed_Aug_20\nCuda compilation tools, release 13.0, V13.0.88\n"
                                         "Build cuda_13.0.r13.0/compiler.36424714_0\n"),
              "Cuda compilation tools, release 13.0, V13.0.88");
    EXPECT_EQ(kc::pick_nvcc_version_line("something\n"), "something");
}

TEST_F(NvccBuilderTest, BuildsRecordsPtxasAndHitsWithoutSpawning) {
    kc::nvcc_builder b(m_runner);
    const auto first = b.build(request());
    ASSERT_TRUE(first.ok) << first.diagnostics;
    EXPECT_FALSE(first.cache_hit);
    EXPECT_EQ(m_runner.count, 2);  // --version and the compile
    EXPECT_EQ(first.target, "sm_90");
    EXPECT_EQ(first.compiler_version, "Cuda compilation tools, release 13.0, V13.0.88");
    EXPECT_TRUE(has(first.argv, "-lineinfo"));
    EXPECT_TRUE(has(first.argv, "-arch=sm_90"));
    const auto report = kc::ptxas_report::from_json(first.ptxas);
    ASSERT_EQ(report.kernels.size(), 1u);
    EXPECT_EQ(report.kernels[0].registers, 12);
    EXPECT_EQ(report.kernels[0].smem_bytes, 1024);
    EXPECT_TRUE(first.diagnostics.empty()) << first.diagnostics;  // ptxas info is the report, not a warning
    EXPECT_TRUE(fs::is_regular_file(first.entry_dir / "ptxas.txt"));

    counting_runner fresh;  // a new kloop process: nothing memoised
    kc::nvcc_builder b2(fresh);
    const auto second = b2.build(request());
    ASSERT_TRUE(second.ok);
    EXPECT_TRUE(second.cache_hit);
    EXPECT_EQ(fresh.count, 0);
    EXPECT_EQ(second.library, first.library);
    EXPECT_EQ(second.ptxas, first.ptxas);
    EXPECT_EQ(second.target, "sm_90");
    EXPECT_EQ(second.compiler_version, first.compiler_version);
}

TEST_F(NvccBuilderTest, FlagsArchAndSourceChangeTheKey) {
    kc::nvcc_builder b(m_runner);
    const auto base = b.build(request());
    auto r = request();
    r.arch_suffix = "a";
    const auto a = b.build(r);
    EXPECT_NE(a.key, base.key);
    EXPECT_EQ(a.target, "sm_90a");
    r = request();
    r.flags = {"--use_fast_math"};
    EXPECT_NE(b.build(r).key, base.key);
    kp::write_file_atomic(m_dir.path() / "src" / "copy.cu", "// edited\n");
    const auto edited = b.build(request());
    EXPECT_NE(edited.key, base.key);
    EXPECT_FALSE(edited.cache_hit);
}

TEST_F(NvccBuilderTest, CompileErrorIsData) {
    kp::write_file_atomic(m_dir.path() / "src" / "copy.cu", "FAIL_ME\n");
    kc::nvcc_builder b(m_runner);
    const auto rec = b.build(request());
    EXPECT_FALSE(rec.ok);
    EXPECT_NE(rec.diagnostics.find("FAIL_ME found"), std::string::npos);
}

TEST_F(NvccBuilderTest, MissingNvccIsAUsageError) {
    auto r = request();
    r.compiler = (m_dir.path() / "no-such-nvcc").string();
    kc::nvcc_builder b(m_runner);
    try {
        (void)b.build(r);
        FAIL() << "expected a usage_error";
    } catch (const kloop::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("KLOOP_NVCC"), std::string::npos) << e.what();
    }
}

// With the real toolkit: a .cu that dlopens (the library needs only libcudart's symbols it
// links statically, so it loads on a machine without a GPU) and a real ptxas report.
TEST_F(NvccBuilderTest, RealNvccWhenInstalled) {
    if (!kloop::testing::nvcc_installed()) GTEST_SKIP() << "nvcc not installed";
    const std::string nvcc = kc::default_nvcc();
    auto r = request();
    r.compiler = nvcc;
    r.source = fs::path(KLOOP_TEST_SOURCE_DIR) / "tests/data/ptxas/basic.cu";
    kc::nvcc_builder b(m_runner);
    const auto rec = b.build(r);
    ASSERT_TRUE(rec.ok) << rec.diagnostics;
    EXPECT_NE(rec.compiler_version.find("release"), std::string::npos);
    const auto report = kc::ptxas_report::from_json(rec.ptxas);
    EXPECT_NE(report.find("copy_k(float const*, float*, long)"), nullptr);
    EXPECT_NE(report.find("_Z6smem_kPKfPfi"), nullptr);
    void* h = ::dlopen(rec.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(h, nullptr) << ::dlerror();
    EXPECT_NE(::dlsym(h, "copy"), nullptr);
    ::dlclose(h);
}
