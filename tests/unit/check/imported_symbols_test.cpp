// Unit under test: check/imported_symbols — the ELF64 dynamic-symbol reader and the import
// classifier behind the `imported_symbols` integrity check. Small shared objects are built with
// the host C++ compiler ($KLOOP_CXX or c++) at test time, so the reader sees what a real
// toolchain writes; the bundled CPU example's versions must come out clean.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "check/imported_symbols.hpp"
#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"

namespace kc = kloop::check;
namespace kp = kloop::platform;
namespace fs = std::filesystem;

namespace {

std::string compiler() {
    const char* cxx = std::getenv("KLOOP_CXX");
    return cxx != nullptr && *cxx != '\0' ? cxx : "c++";
}

class ImportedSymbolsTest : public ::testing::Test {
protected:
    kp::scoped_temp_dir m_dir{"kloop-imports-test"};

    // Compiles `source` into lib<name>.so (extra: more compiler/linker arguments).
    fs::path build(const std::string& name, const std::string& source, std::vector<std::string> extra = {}) {
        const auto src = m_dir.path() / (name + ".cpp");
        kp::write_file_atomic(src, source);
        const auto so = m_dir.path() / ("lib" + name + ".so");
        kp::process_request r;
        r.argv = {compiler(), "-std=c++17", "-O1", "-shared", "-fPIC", "-o", so.string(), src.string()};
        r.argv.insert(r.argv.end(), extra.begin(), extra.end());
        r.timeout_s = 120;
        kp::posix_command_runner runner;
        const auto res = runner.run(r);
        EXPECT_TRUE(res.succeeded()) << res.describe() << "\n" << res.stderr_text;
        return so;
    }

    static std::vector<kc::import_finding> findings_of(const fs::path& so) {
        return kc::classify_imports(kc::read_dynamic_symbols(so));
    }
};

bool has(const std::vector<kc::import_finding>& f, kc::import_category c, const std::string& subject,
         kc::finding_severity sev) {
    return std::any_of(f.begin(), f.end(), [&](const kc::import_finding& x) {
        return x.category == c && x.subject == subject && x.severity == sev;
    });
}

bool any_fail(const std::vector<kc::import_finding>& f) {
    return std::any_of(f.begin(), f.end(), [](const auto& x) { return x.severity == kc::finding_severity::fail; });
}

}  // namespace

TEST_F(ImportedSymbolsTest, CleanLibraryHasNoFindings) {
    const auto so = build("clean", R"(extern "C" int entry(float* x, int n) { for (int i = 0; i < n; ++i) x[i] *= 2; return 0; })");
    const auto t = kc::read_dynamic_symbols(so);
    EXPECT_TRUE(std::any_of(t.symbols.begin(), t.symbols.end(),
                            [](const kc::dynamic_symbol& s) { return s.name == "entry" && s.defined; }));
    EXPECT_FALSE(t.has_device_code());
    const auto f = kc::classify_imports(t);
    EXPECT_TRUE(f.empty()) << kc::describe_findings(f, t);
    EXPECT_NE(kc::describe_findings(f, t).find("none suspicious"), std::string::npos);
}

TEST_F(ImportedSymbolsTest, PthreadCreateIsAThreadWarning) {
    const auto so = build("threads", R"(
#include <pthread.h>
static void* work(void* p) { *static_cast<int*>(p) = 1; return nullptr; }
extern "C" int entry(int* x) { pthread_t t; pthread_create(&t, nullptr, work, x); return 0; })",
                          {"-pthread"});
    const auto f = findings_of(so);
    EXPECT_TRUE(has(f, kc::import_category::thread_creation, "pthread_create", kc::finding_severity::warn));
    EXPECT_FALSE(any_fail(f));
}

TEST_F(ImportedSymbolsTest, StdThreadIsAThreadWarning) {
    const auto so = build("stdthread", R"(
#include <thread>
extern "C" int entry(int* x) { std::thread t([x] { *x = 1; }); t.join(); return 0; })",
                          {"-pthread"});
    const auto f = findings_of(so);
    ASSERT_FALSE(f.empty());
    EXPECT_TRUE(std::any_of(f.begin(), f.end(), [](const auto& x) {
        return x.category == kc::import_category::thread_creation && x.subject.find("_M_start_thread") != std::string::npos;
    }));
    EXPECT_FALSE(any_fail(f)) << kc::describe_findings(f, kc::read_dynamic_symbols(so));
}

TEST_F(ImportedSymbolsTest, DlopenFails) {
    const auto so = build("dlopen", R"(
#include <dlfcn.h>
extern "C" int entry() { void* h = dlopen("libm.so.6", RTLD_NOW); return h ? 0 : 1; })",
                          {"-ldl"});
    const auto f = findings_of(so);
    EXPECT_TRUE(has(f, kc::import_category::dynamic_loading, "dlopen", kc::finding_severity::fail));
    EXPECT_NE(kc::describe_findings(f, kc::read_dynamic_symbols(so)).find("fail: imports dlopen (dynamic_loading)"),
              std::string::npos);
}

TEST_F(ImportedSymbolsTest, TimersFail) {
    const auto so = build("timers", R"(
#include <chrono>
#include <ctime>
extern "C" long entry() {
    timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_nsec + std::chrono::steady_clock::now().time_since_epoch().count();
})");
    const auto f = findings_of(so);
    EXPECT_TRUE(has(f, kc::import_category::timer, "clock_gettime", kc::finding_severity::fail));
    EXPECT_TRUE(std::any_of(f.begin(), f.end(), [](const auto& x) {
        return x.category == kc::import_category::timer && x.subject.find("steady_clock") != std::string::npos;
    }));
}

TEST_F(ImportedSymbolsTest, ProcessCreationFails) {
    const auto so = build("spawn", R"(
#include <cstdlib>
#include <unistd.h>
extern "C" int entry() { if (fork() == 0) _exit(0); return std::system("true"); })");
    const auto f = findings_of(so);
    EXPECT_TRUE(has(f, kc::import_category::process_creation, "fork", kc::finding_severity::fail));
    EXPECT_TRUE(has(f, kc::import_category::process_creation, "system", kc::finding_severity::fail));
}

// Undefined references stay in .dynsym of a -shared link even when the library is absent.
TEST_F(ImportedSymbolsTest, VendorBlasSymbolsAndStreamsAreFound) {
    const auto so = build("vendor", R"(
extern "C" int cublasSgemm_v2(void*, int, int, int, int, int, const float*, const float*, int, const float*, int,
                              const float*, float*, int);
extern "C" int cudaStreamCreateWithFlags(void**, unsigned);
extern "C" int cudaEventRecord(void*, void*);
extern "C" int entry(float* c) {
    void* s = nullptr; cudaStreamCreateWithFlags(&s, 1); cudaEventRecord(nullptr, s);
    return cublasSgemm_v2(nullptr, 0, 0, 1, 1, 1, c, c, 1, c, 1, c, c, 1);
})");
    const auto f = findings_of(so);
    EXPECT_TRUE(has(f, kc::import_category::vendor_library, "cublasSgemm_v2", kc::finding_severity::fail));
    EXPECT_TRUE(has(f, kc::import_category::stream_creation, "cudaStreamCreateWithFlags", kc::finding_severity::warn));
    EXPECT_TRUE(has(f, kc::import_category::timer, "cudaEventRecord", kc::finding_severity::fail));
    // Fails are listed before warnings.
    EXPECT_EQ(f.front().severity, kc::finding_severity::fail);
    EXPECT_EQ(f.back().severity, kc::finding_severity::warn);
}

TEST_F(ImportedSymbolsTest, NeededVendorLibraryFails) {
    // A stand-in named like cuBLAS: the DT_NEEDED entry alone is enough.
    build("cublas", R"(extern "C" int fake_gemm() { return 0; })", {"-Wl,-soname,libcublas.so.13"});
    const auto so = build("usesblas", R"(extern "C" int fake_gemm(); extern "C" int entry() { return fake_gemm(); })",
                          {"-Wl,--no-as-needed", "-L" + m_dir.path().string(), "-lcublas"});
    const auto t = kc::read_dynamic_symbols(so);
    EXPECT_TRUE(std::find(t.needed.begin(), t.needed.end(), "libcublas.so.13") != t.needed.end());
    EXPECT_TRUE(has(kc::classify_imports(t), kc::import_category::vendor_library, "libcublas.so.13",
                    kc::finding_severity::fail));
}

TEST_F(ImportedSymbolsTest, ExportingATimerIsAnInterpositionAttempt) {
    const auto so = build("interpose", R"(
#include <ctime>
extern "C" int clock_gettime(clockid_t, struct timespec* ts) noexcept { ts->tv_sec = 0; ts->tv_nsec = 1; return 0; })");
    const auto f = findings_of(so);
    ASSERT_EQ(f.size(), 1u) << kc::describe_findings(f, kc::read_dynamic_symbols(so));
    EXPECT_EQ(f[0].relation, "exports");
    EXPECT_EQ(f[0].severity, kc::finding_severity::fail);
}

TEST_F(ImportedSymbolsTest, DeviceCodeWithoutSharedCudartIsUnattributable) {
    // nvcc puts device code in .nv_fatbin; a section of that name is all the rule looks at.
    const auto so = build("fatbin", R"(
__attribute__((section(".nv_fatbin"), used)) static const char blob[16] = {1};
extern "C" int entry() { return blob[0]; })");
    const auto t = kc::read_dynamic_symbols(so);
    EXPECT_TRUE(t.has_device_code());
    EXPECT_TRUE(has(kc::classify_imports(t), kc::import_category::static_cuda_runtime, "libcudart_static",
                    kc::finding_severity::fail));
}

TEST_F(ImportedSymbolsTest, BundledCpuExampleIsClean) {
    // The versions (and the reference) of examples/rmsnorm must not trip the check; flags as in
    // its op.toml. (-march=native is fine here: the test only reads the symbol table.)
    const fs::path ex = fs::path(KLOOP_TEST_SOURCE_DIR) / "examples/rmsnorm";
    for (const auto* file : {"reference.cpp", "versions/v0_naive.cpp", "versions/v1_rowwise.cpp", "versions/v2_streaming.cpp"}) {
        const auto src = kp::read_file(ex / file);
        const auto so = build(fs::path(file).stem().string(), src,
                              {"-O3", "-march=native", "-I" + (fs::path(KLOOP_TEST_SOURCE_DIR) / "include").string()});
        const auto t = kc::read_dynamic_symbols(so);
        const auto f = kc::classify_imports(t);
        EXPECT_TRUE(f.empty()) << file << ": " << kc::describe_findings(f, t);
    }
}

TEST(ImportedSymbolsParse, RejectsWhatIsNotASharedObject) {
    EXPECT_THROW((void)kc::parse_dynamic_symbols("", "empty"), kloop::usage_error);
    EXPECT_THROW((void)kc::parse_dynamic_symbols("#!/bin/sh\necho hi\n" + std::string(64, ' '), "script"), kloop::usage_error);
    try {
        (void)kc::parse_dynamic_symbols(std::string(100, 'x'), "junk.so");
        FAIL() << "no throw";
    } catch (const kloop::usage_error& e) {
        EXPECT_STREQ(e.what(), "cannot read the dynamic symbol table of 'junk.so': not an ELF file");
    }
    EXPECT_THROW((void)kc::read_dynamic_symbols("/nonexistent/lib.so"), kloop::usage_error);
}

TEST_F(ImportedSymbolsTest, TruncatedOrCorruptImagesThrowInsteadOfReadingOutOfRange) {
    const auto so = build("trunc", R"(extern "C" int entry() { return 0; })");
    const auto bytes = kp::read_file(so);
    // Every prefix length either parses (it cannot: section headers sit at the end) or throws.
    for (std::size_t n : {std::size_t{64}, bytes.size() / 2, bytes.size() - 1})
        EXPECT_THROW((void)kc::parse_dynamic_symbols(std::string_view(bytes).substr(0, n), "trunc"), kloop::usage_error) << n;
    // Flip bytes all over the section header table: never a crash, a table or an error.
    const auto* eh = reinterpret_cast<const unsigned char*>(bytes.data());
    std::uint64_t shoff = 0;
    std::memcpy(&shoff, eh + 0x28, 8);
    for (std::size_t k = 0; k < 64 * 30; k += 7) {
        auto copy = bytes;
        if (shoff + k >= copy.size()) break;
        copy[shoff + k] = static_cast<char>(copy[shoff + k] ^ 0x5A);
        try {
            (void)kc::parse_dynamic_symbols(copy, "flipped");
        } catch (const kloop::usage_error&) {
        }
    }
}

TEST(ImportedSymbolsClassify, SymbolRules) {
    kc::import_category c{};
    EXPECT_TRUE(kc::classify_symbol("cublasLtMatmul", c));
    EXPECT_EQ(c, kc::import_category::vendor_library);
    EXPECT_TRUE(kc::classify_symbol("cudnnConvolutionForward", c));
    EXPECT_TRUE(kc::classify_symbol("dlsym@GLIBC_2.34", c));
    EXPECT_EQ(c, kc::import_category::dynamic_loading);
    EXPECT_TRUE(kc::classify_symbol("_ZNSt6chrono3_V212system_clock3nowEv", c));
    EXPECT_EQ(c, kc::import_category::timer);
    EXPECT_TRUE(kc::classify_symbol("_ZNSt6chrono12system_clock3nowEv", c));
    EXPECT_TRUE(kc::classify_symbol("cuEventElapsedTime", c));
    EXPECT_EQ(c, kc::import_category::timer);
    EXPECT_TRUE(kc::classify_symbol("posix_spawnp", c));
    EXPECT_EQ(c, kc::import_category::process_creation);
    EXPECT_TRUE(kc::classify_symbol("cuptiActivityEnable", c));
    EXPECT_EQ(c, kc::import_category::profiler_interface);
    EXPECT_TRUE(kc::classify_symbol("cuGetProcAddress_v2", c));
    EXPECT_EQ(c, kc::import_category::dynamic_loading);
    EXPECT_TRUE(kc::classify_symbol("cudaStreamCreateWithPriority", c));
    EXPECT_EQ(kc::severity_of(c), kc::finding_severity::warn);
    // Legitimate neighbours stay quiet.
    for (const auto* ok : {"posix_spawn_file_actions_init", "_ZNSt6chrono3_V212steady_clock9is_steadyE", "clock_getres_x",
                           "timer_settime_x", "cudaStreamSynchronize", "cudaLaunchKernel", "pthread_mutex_lock",
                           "pthread_once", "_ZNSt6thread4joinEv", "__cudaRegisterFatBinary", "memset", "sqrtf",
                           "__cxa_finalize", "_Unwind_Resume", "__tls_get_addr", "cudaGetLastError", "cudaMalloc"})
        EXPECT_FALSE(kc::classify_symbol(ok, c)) << ok;
    EXPECT_TRUE(kc::classify_library("libcudnn_ops.so.9", c));
    EXPECT_TRUE(kc::classify_library("libcublasLt.so.13", c));
    EXPECT_FALSE(kc::classify_library("libcudart.so.13", c));
    EXPECT_FALSE(kc::classify_library("libstdc++.so.6", c));
    kc::import_category back{};
    EXPECT_TRUE(kc::from_string(kc::to_string(kc::import_category::host_callback), back));
    EXPECT_EQ(back, kc::import_category::host_callback);
    EXPECT_FALSE(kc::from_string("nope", back));
}
