// Unit under test: backend/python worker_environment — what every Python worker and probe is
// started with: the worker on PYTHONPATH, bytecode cached under kloop's cache (never beside the
// user's files, never recompiled per process), the candidate's own Triton and Inductor caches.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "backend/python/python_worker.hpp"
#include "support/scoped_env.hpp"

namespace kpy = kloop::backend::python;
using kloop::testing::scoped_env;

namespace {

std::map<std::string, std::string> env_of(const kpy::library_manifest& m) {
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : kpy::worker_environment(m)) out[k] = v;
    return out;
}

kpy::library_manifest manifest() {
    kpy::library_manifest m;
    m.worker_dir = "/opt/kloop/python";
    m.triton_cache_dir = "/cache/py/abc/triton";
    m.inductor_cache_dir = "/cache/py/abc/inductor";
    return m;
}

}  // namespace

TEST(PythonWorkerEnvTest, BytecodeIsCachedUnderKloopsCache) {
    const scoped_env home("KLOOP_HOME", "/tmp/kloop-home-env-test");
    const scoped_env path("PYTHONPATH", std::nullopt);
    const auto e = env_of(manifest());
    EXPECT_EQ(e.at("PYTHONPYCACHEPREFIX"), "/tmp/kloop-home-env-test/cache/python-bytecode");
    EXPECT_EQ(e.at("PYTHONDONTWRITEBYTECODE"), "");  // empty: off, whatever kloop inherited
    EXPECT_EQ(e.at("PYTHONPATH"), "/opt/kloop/python");
    EXPECT_EQ(e.at("TRITON_CACHE_DIR"), "/cache/py/abc/triton");
    EXPECT_EQ(e.at("TORCHINDUCTOR_CACHE_DIR"), "/cache/py/abc/inductor");
}

TEST(PythonWorkerEnvTest, AnInheritedDontWriteBytecodeDoesNotDefeatTheCache) {
    const scoped_env home("KLOOP_HOME", "/tmp/kloop-home-env-test");
    const scoped_env off("PYTHONDONTWRITEBYTECODE", "1");
    const auto e = env_of(manifest());
    EXPECT_EQ(e.at("PYTHONDONTWRITEBYTECODE"), "");
    EXPECT_EQ(e.at("PYTHONPYCACHEPREFIX"), "/tmp/kloop-home-env-test/cache/python-bytecode");
}

TEST(PythonWorkerEnvTest, TheUsersPythonPathFollowsTheWorkers) {
    const scoped_env home("KLOOP_HOME", "/tmp/kloop-home-env-test");
    const scoped_env path("PYTHONPATH", "/src/fla");
    EXPECT_EQ(env_of(manifest()).at("PYTHONPATH"), "/opt/kloop/python:/src/fla");
}
