// Unit under test: backend/cpu/cpu_builder — compiling a candidate with the real compiler into
// a temporary cache; hits that spawn nothing; invalidation by flags and by included headers;
// compile errors as data.
#include <gtest/gtest.h>

#include <fstream>

#include <dlfcn.h>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_builder.hpp"
#include "core/error.hpp"
#include "kloop/kernel.h"
#include "platform/file_io.hpp"
#include "platform/sha256.hpp"
#include "platform/subprocess.hpp"

namespace fs = std::filesystem;
namespace kp = kloop::platform;
namespace kc = kloop::backend::cpu;

namespace {

// Decorator: forwards to the real runner and counts spawns.
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

const char* k_source = R"(#include "kloop/kernel.h"
#include "local.h"
extern "C" int f(const kl_args* args) {
    return args == nullptr ? -1 : LOCAL_VALUE + args->n_inputs;
}
)";

class CpuBuilderTest : public ::testing::Test {
protected:
    void SetUp() override {
        kp::write_file_atomic(m_src_dir.path() / "kernel.cpp", k_source);
        kp::write_file_atomic(m_src_dir.path() / "local.h", "#define LOCAL_VALUE 41\n");
    }

    kc::build_request request() const {
        kc::build_request r;
        r.source = m_src_dir.path() / "kernel.cpp";
        r.flags = {"-O1"};
        r.abi_include_dir = fs::path(KLOOP_TEST_SOURCE_DIR) / "include";
        r.cache_dir = m_cache.path();
        r.timeout_s = 120;
        return r;
    }

    kp::scoped_temp_dir m_src_dir{"kloop-cpu-builder-src"};
    kp::scoped_temp_dir m_cache{"kloop-cpu-builder-cache"};
    counting_runner m_runner;
};

int call_f(const fs::path& lib) {
    void* h = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(h, nullptr) << ::dlerror();
    if (h == nullptr) return -1000;
    using fn_t = int (*)(const kl_args*);
    auto fn = reinterpret_cast<fn_t>(::dlsym(h, "f"));
    EXPECT_NE(fn, nullptr);
    kl_args args{};
    args.abi_version = KL_ABI_VERSION;
    args.n_inputs = 1;
    int v = fn != nullptr ? fn(&args) : -1000;
    ::dlclose(h);
    return v;
}

}  // namespace

TEST_F(CpuBuilderTest, BuildsALoadableLibrary) {
    kc::cpu_builder b(m_runner);
    auto rec = b.build(request());
    ASSERT_TRUE(rec.ok) << rec.diagnostics;
    EXPECT_FALSE(rec.cache_hit);
    EXPECT_TRUE(fs::is_regular_file(rec.library));
    EXPECT_EQ(rec.key.size(), 64u);
    EXPECT_EQ(rec.library, m_cache.path() / "build" / rec.key / "lib.so");
    EXPECT_FALSE(rec.compiler_version.empty());
    EXPECT_TRUE(fs::path(rec.compiler).is_absolute());
    EXPECT_EQ(call_f(rec.library), 42);
    // The argv is recorded as run, with the defaults the builder adds.
    auto has = [&](const std::string& a) { return std::find(rec.argv.begin(), rec.argv.end(), a) != rec.argv.end(); };
    EXPECT_TRUE(has("-O1"));
    EXPECT_TRUE(has("-std=c++17"));
    EXPECT_TRUE(has("-shared"));
    EXPECT_TRUE(has("-fPIC"));
    EXPECT_TRUE(fs::is_regular_file(rec.entry_dir / "meta.json"));
    EXPECT_TRUE(fs::is_regular_file(rec.entry_dir / "deps.json"));
    auto j = rec.to_json();
    EXPECT_EQ(j.at("ok"), true);
    EXPECT_EQ(j.at("key"), rec.key);
}

TEST_F(CpuBuilderTest, SecondBuildIsAHitWithoutSpawning) {
    kc::cpu_builder b(m_runner);
    auto first = b.build(request());
    ASSERT_TRUE(first.ok) << first.diagnostics;
    EXPECT_EQ(m_runner.count, 2);  // --version and the compile

    counting_runner fresh;  // a new kloop process: nothing memoised
    kc::cpu_builder b2(fresh);
    auto second = b2.build(request());
    ASSERT_TRUE(second.ok);
    EXPECT_TRUE(second.cache_hit);
    EXPECT_EQ(fresh.count, 0);
    EXPECT_EQ(second.library, first.library);
    EXPECT_EQ(second.key, first.key);
    EXPECT_EQ(second.argv, first.argv);  // the original build's command
    EXPECT_EQ(second.compiler_version, first.compiler_version);
    EXPECT_EQ(call_f(second.library), 42);
}

TEST_F(CpuBuilderTest, ChangingFlagsMisses) {
    kc::cpu_builder b(m_runner);
    auto first = b.build(request());
    ASSERT_TRUE(first.ok) << first.diagnostics;
    auto req = request();
    req.flags = {"-O2"};
    auto second = b.build(req);
    ASSERT_TRUE(second.ok) << second.diagnostics;
    EXPECT_FALSE(second.cache_hit);
    EXPECT_NE(second.key, first.key);
}

TEST_F(CpuBuilderTest, StdFlagReplacesTheDefault) {
    kc::cpu_builder b(m_runner);
    auto req = request();
    req.flags = {"-O1", "-std=c++20"};
    auto rec = b.build(req);
    ASSERT_TRUE(rec.ok) << rec.diagnostics;
    EXPECT_EQ(std::count(rec.argv.begin(), rec.argv.end(), "-std=c++17"), 0);
}

TEST_F(CpuBuilderTest, EditingAnIncludedHeaderMisses) {
    kc::cpu_builder b(m_runner);
    auto first = b.build(request());
    ASSERT_TRUE(first.ok) << first.diagnostics;
    kp::write_file_atomic(m_src_dir.path() / "local.h", "#define LOCAL_VALUE 99\n");
    int before = m_runner.count;
    auto second = b.build(request());
    ASSERT_TRUE(second.ok) << second.diagnostics;
    EXPECT_FALSE(second.cache_hit);
    EXPECT_EQ(second.key, first.key);  // same inputs by name; the dependency check caught it
    EXPECT_EQ(m_runner.count, before + 1);  // the compile only: the version is memoised
    EXPECT_EQ(call_f(second.library), 100);
    // And the rebuilt entry is a hit again.
    auto third = b.build(request());
    EXPECT_TRUE(third.cache_hit);
}

TEST_F(CpuBuilderTest, ALibraryChangedAfterItsBuildIsRebuiltNotLoaded) {
    // A candidate that rewrites a cached lib.so (the reference's, another version's) must not
    // have its bytes loaded by a later hit: the entry's recorded SHA-256 no longer matches.
    kc::cpu_builder b(m_runner);
    auto first = b.build(request());
    ASSERT_TRUE(first.ok) << first.diagnostics;
    ASSERT_EQ(first.library_sha256.size(), 64u);
    EXPECT_EQ(first.library_sha256, kp::sha256_file(first.library));
    {
        std::ofstream poison(first.library, std::ios::binary | std::ios::trunc);
        poison << std::string(64, '\0');
    }
    auto second = b.build(request());
    ASSERT_TRUE(second.ok) << second.diagnostics;
    EXPECT_FALSE(second.cache_hit);
    EXPECT_EQ(second.library_sha256, first.library_sha256);  // the same compile, the same bytes
    EXPECT_EQ(call_f(second.library), 42);
    EXPECT_TRUE(b.build(request()).cache_hit);
}

TEST_F(CpuBuilderTest, EditingTheSourceMisses) {
    kc::cpu_builder b(m_runner);
    auto first = b.build(request());
    ASSERT_TRUE(first.ok) << first.diagnostics;
    kp::write_file_atomic(m_src_dir.path() / "kernel.cpp", std::string(k_source) + "// edited\n");
    auto second = b.build(request());
    ASSERT_TRUE(second.ok) << second.diagnostics;
    EXPECT_FALSE(second.cache_hit);
    EXPECT_NE(second.key, first.key);
}

TEST_F(CpuBuilderTest, SyntaxErrorIsDataNotAnException) {
    kp::write_file_atomic(m_src_dir.path() / "broken.cpp",
                          "#include \"kloop/kernel.h\"\n"
                          "extern \"C\" int f(const kl_args* args) {\n"
                          "    return args->n_inputs +;\n"
                          "}\n");
    kc::cpu_builder b(m_runner);
    auto req = request();
    req.source = m_src_dir.path() / "broken.cpp";
    kc::build_record rec;
    ASSERT_NO_THROW(rec = b.build(req));
    EXPECT_FALSE(rec.ok);
    EXPECT_FALSE(rec.cache_hit);
    EXPECT_NE(rec.diagnostics.find("broken.cpp:3:"), std::string::npos) << rec.diagnostics;
    EXPECT_NE(rec.diagnostics.find("error"), std::string::npos) << rec.diagnostics;
    // Nothing was published for the failed build.
    EXPECT_FALSE(fs::exists(m_cache.path() / "build" / rec.key / "lib.so"));
    EXPECT_FALSE(fs::exists(m_cache.path() / "build" / rec.key / "meta.json"));
    // A failure is not cached: the next attempt compiles again.
    int before = m_runner.count;
    auto again = b.build(req);
    EXPECT_FALSE(again.ok);
    EXPECT_EQ(m_runner.count, before + 1);
}

TEST_F(CpuBuilderTest, MissingSourceIsAUsageError) {
    kc::cpu_builder b(m_runner);
    auto req = request();
    req.source = m_src_dir.path() / "nope.cpp";
    EXPECT_THROW((void)b.build(req), kloop::usage_error);
    EXPECT_EQ(m_runner.count, 0);
}

TEST_F(CpuBuilderTest, MissingCompilerIsAUsageError) {
    kc::cpu_builder b(m_runner);
    auto req = request();
    req.compiler = "kloop-no-such-compiler";
    try {
        (void)b.build(req);
        FAIL() << "expected usage_error";
    } catch (const kloop::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("kloop-no-such-compiler"), std::string::npos) << e.what();
    }
}

TEST_F(CpuBuilderTest, UnwritableCacheIsAUsageError) {
    kp::write_file_atomic(m_cache.path() / "blocker", "a file where the cache should be");
    kc::cpu_builder b(m_runner);
    auto req = request();
    req.cache_dir = m_cache.path() / "blocker";
    EXPECT_THROW((void)b.build(req), kloop::usage_error);
}

TEST_F(CpuBuilderTest, ConcurrentBuildsOfOneEntryAgree) {
    std::vector<kc::build_record> recs(4);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < recs.size(); ++i) {
        threads.emplace_back([&, i] {
            kp::posix_command_runner runner;
            kc::cpu_builder b(runner);
            recs[i] = b.build(request());
        });
    }
    for (auto& t : threads) t.join();
    int compiled = 0;
    for (const auto& r : recs) {
        ASSERT_TRUE(r.ok) << r.diagnostics;
        EXPECT_EQ(r.library, recs[0].library);
        if (!r.cache_hit) ++compiled;
    }
    EXPECT_EQ(compiled, 1);  // the others waited on the lock, then hit
    EXPECT_EQ(call_f(recs[0].library), 42);
    // No temporaries left in the entry.
    for (const auto& e : fs::directory_iterator(recs[0].entry_dir))
        EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();
}

TEST(DefaultCompilerTest, ReadsKloopCxx) {
    ::setenv("KLOOP_CXX", "clang++", 1);
    EXPECT_EQ(kc::default_compiler(), "clang++");
    ::unsetenv("KLOOP_CXX");
    EXPECT_EQ(kc::default_compiler(), "c++");
}
