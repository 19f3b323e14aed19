// Unit under test: blackbox/gate_env — refusing gate-weakening variables (FLA_CI_ENV, SKIP_TEST_*,
// PYTEST_ADDOPTS, the spec's refuse_env) and building the clean, recorded child environment.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/blackbox/gate_env.hpp"
#include "core/error.hpp"

using namespace kloop::backend::blackbox;

namespace {

env_sources sources(env_list kloop_env, env_list spec_env = {}, std::vector<std::string> extra_refused = {}) {
    env_sources s;
    s.kloop_env = std::move(kloop_env);
    s.refused = kloop::spec::builtin_refused_env();
    s.refused.insert(s.refused.end(), extra_refused.begin(), extra_refused.end());
    s.spec_env = std::move(spec_env);
    s.kloop_set = {{"PYTHONDONTWRITEBYTECODE", "1"}};
    return s;
}

std::string refusal_message(const env_sources& s) {
    try {
        (void)make_clean_env(s, "/repo/op.toml");
    } catch (const kloop::usage_error& e) {
        EXPECT_EQ(e.get_code(), kloop::exit_code::usage_error);
        return e.what();
    }
    return "";
}

TEST(GateEnvTest, PatternsMatchExactNamesAndPrefixes) {
    EXPECT_TRUE(kloop::spec::env_pattern_matches("FLA_CI_ENV", "FLA_CI_ENV"));
    EXPECT_FALSE(kloop::spec::env_pattern_matches("FLA_CI_ENV", "FLA_CI_ENV2"));
    EXPECT_TRUE(kloop::spec::env_pattern_matches("SKIP_TEST_*", "SKIP_TEST_FOO"));
    EXPECT_TRUE(kloop::spec::env_pattern_matches("SKIP_TEST_*", "SKIP_TEST_"));
    EXPECT_FALSE(kloop::spec::env_pattern_matches("SKIP_TEST_*", "SKIP_TESTS"));
    EXPECT_EQ(kloop::spec::matching_pattern(kloop::spec::builtin_refused_env(), "SKIP_TEST_LARGE"), "SKIP_TEST_*");
    EXPECT_EQ(kloop::spec::matching_pattern(kloop::spec::builtin_refused_env(), "HOME"), "");
}

TEST(GateEnvTest, PatternSyntax) {
    EXPECT_TRUE(kloop::spec::is_env_pattern("FLA_CI_ENV"));
    EXPECT_TRUE(kloop::spec::is_env_pattern("SKIP_*"));
    EXPECT_TRUE(kloop::spec::is_env_pattern("_x1"));
    EXPECT_FALSE(kloop::spec::is_env_pattern("*"));
    EXPECT_FALSE(kloop::spec::is_env_pattern(""));
    EXPECT_FALSE(kloop::spec::is_env_pattern("1ABC"));
    EXPECT_FALSE(kloop::spec::is_env_pattern("A-B"));
    EXPECT_FALSE(kloop::spec::is_env_pattern("A*B"));
}

TEST(GateEnvTest, FlaCiEnvInKloopsEnvironmentIsRefusedByName) {
    const auto msg = refusal_message(sources({{"PATH", "/usr/bin"}, {"FLA_CI_ENV", "1"}}));
    EXPECT_NE(msg.find("'FLA_CI_ENV'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("kloop's environment"), std::string::npos) << msg;
    EXPECT_NE(msg.find("unset FLA_CI_ENV"), std::string::npos) << msg;
}

TEST(GateEnvTest, AnySkipTestVariableIsRefused) {
    const auto msg = refusal_message(sources({{"SKIP_TEST_FOO", "1"}}));
    EXPECT_NE(msg.find("'SKIP_TEST_FOO'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("SKIP_TEST_*"), std::string::npos) << msg;
}

TEST(GateEnvTest, EvenAnEmptyValueIsRefused) {
    EXPECT_NE(refusal_message(sources({{"FLA_CI_ENV", ""}})), "");
}

TEST(GateEnvTest, PytestAddoptsIsRefused) {
    EXPECT_NE(refusal_message(sources({{"PYTEST_ADDOPTS", "-k fast"}})).find("PYTEST_ADDOPTS"), std::string::npos);
}

TEST(GateEnvTest, SpecEnvIsCheckedToo) {
    const auto msg = refusal_message(sources({{"PATH", "/usr/bin"}}, {{"SKIP_TEST_BIG", "1"}}));
    EXPECT_NE(msg.find("'SKIP_TEST_BIG'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("/repo/op.toml"), std::string::npos) << msg;
}

TEST(GateEnvTest, SpecRefuseEnvAddsPatterns) {
    EXPECT_EQ(refusal_message(sources({{"MY_FAST", "1"}})), "");
    const auto msg = refusal_message(sources({{"MY_FAST", "1"}}, {}, {"MY_*"}));
    EXPECT_NE(msg.find("'MY_FAST'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("refuse_env"), std::string::npos) << msg;
}

TEST(GateEnvTest, CleanEnvKeepsOnlyTheListedNames) {
    auto s = sources({{"PATH", "/usr/bin"},
                      {"HOME", "/root"},
                      {"LC_ALL", "C"},
                      {"PYTHONPATH", "/the/original/repo"},
                      {"SECRET_TOKEN", "x"},
                      {"HF_HOME", "/data/hf"}},
                     {{"OMP_NUM_THREADS", "1"}, {"PATH", "/opt/py/bin:/usr/bin"}});
    s.pass_env = {"HF_*"};
    const auto env = make_clean_env(s, "op.toml");
    auto has = [&](const std::string& k) {
        return std::any_of(env.vars.begin(), env.vars.end(), [&](const auto& kv) { return kv.first == k; });
    };
    auto value = [&](const std::string& k) {
        for (const auto& [n, v] : env.vars)
            if (n == k) return v;
        return std::string("<unset>");
    };
    EXPECT_TRUE(has("HOME"));
    EXPECT_TRUE(has("LC_ALL"));
    EXPECT_TRUE(has("HF_HOME"));
    EXPECT_FALSE(has("PYTHONPATH"));
    EXPECT_FALSE(has("SECRET_TOKEN"));
    EXPECT_EQ(value("OMP_NUM_THREADS"), "1");
    EXPECT_EQ(value("PATH"), "/opt/py/bin:/usr/bin");  // the spec wins
    EXPECT_EQ(value("PYTHONDONTWRITEBYTECODE"), "1");
    EXPECT_TRUE(std::is_sorted(env.vars.begin(), env.vars.end()));
    const auto line = env.describe();
    EXPECT_NE(line.find("inherited HF_HOME, HOME, LC_ALL, PATH"), std::string::npos) << line;
    EXPECT_NE(line.find("spec OMP_NUM_THREADS=1"), std::string::npos) << line;
    EXPECT_NE(line.find("kloop PYTHONDONTWRITEBYTECODE=1"), std::string::npos) << line;
}

TEST(GateEnvTest, ArgvRunsUnderEnvMinusI) {
    clean_env env;
    env.vars = {{"A", "1"}, {"PATH", "/bin"}};
    const auto argv = argv_with_env(env, {"python", "-m", "pytest"});
    const std::vector<std::string> want = {"env", "-i", "A=1", "PATH=/bin", "python", "-m", "pytest"};
    EXPECT_EQ(argv, want);
}

TEST(GateEnvTest, CurrentEnvironmentSeesSetenv) {
    ::setenv("KLOOP_GATE_ENV_TEST", "yes", 1);
    const auto env = current_environment();
    EXPECT_TRUE(std::any_of(env.begin(), env.end(),
                            [](const auto& kv) { return kv.first == "KLOOP_GATE_ENV_TEST" && kv.second == "yes"; }));
    ::unsetenv("KLOOP_GATE_ENV_TEST");
}

}  // namespace
