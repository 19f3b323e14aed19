// Unit under test: runner::op_timings — per-operation wall time, written as one JSON line to the
// file KLOOP_OP_TIMES names, nothing written without it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "platform/file_io.hpp"
#include "runner/op_timings.hpp"

namespace {

struct env_guard {
    explicit env_guard(const std::string& value) { ::setenv("KLOOP_OP_TIMES", value.c_str(), 1); }
    ~env_guard() { ::unsetenv("KLOOP_OP_TIMES"); }
};

}  // namespace

TEST(OpTimingsTest, AppendsCountsAndSecondsPerOperation) {
    kloop::platform::scoped_temp_dir dir("kloop-op-times");
    const auto file = dir.path() / "times.jsonl";
    {
        env_guard env(file.string());
        kloop::runner::op_timings t;
        t.add("host:time", 0.25);
        t.add("host:time", 0.5);
        { kloop::runner::op_timings::scope s(t, "checker:fill"); }
    }
    {
        env_guard env(file.string());
        kloop::runner::op_timings t;  // a second object appends its own line
        t.add("host:flush", 1.0);
    }
    std::ifstream in(file);
    std::string first, second;
    ASSERT_TRUE(std::getline(in, first));
    ASSERT_TRUE(std::getline(in, second));
    const auto a = nlohmann::json::parse(first);
    EXPECT_EQ(a.at("ops").at("host:time").at("count"), 2);
    EXPECT_DOUBLE_EQ(a.at("ops").at("host:time").at("seconds").get<double>(), 0.75);
    EXPECT_EQ(a.at("ops").at("checker:fill").at("count"), 1);
    EXPECT_GE(a.at("timed_s").get<double>(), 0.75);
    EXPECT_GE(a.at("lifetime_s").get<double>(), 0.0);
    EXPECT_EQ(nlohmann::json::parse(second).at("ops").size(), 1u);
}

TEST(OpTimingsTest, WritesNothingWithoutTheVariable) {
    kloop::platform::scoped_temp_dir dir("kloop-op-times");
    ::unsetenv("KLOOP_OP_TIMES");
    {
        kloop::runner::op_timings t;
        t.add("host:time", 1.0);
    }
    EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}
