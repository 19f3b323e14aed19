// Unit under test: eval/visible_devices — `--devices` to device slots: the default unbound slot,
// all / N / a list, KLOOP_DEVICES standing in for the GPU probe, and the refusals (a black-box
// op, a CPU op without named slots, a device named twice, more devices than there are).
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.hpp"
#include "eval/visible_devices.hpp"

using namespace kloop;

namespace {

class never_runs final : public platform::command_runner_base {
protected:
    platform::process_result do_run(const platform::process_request&) override {
        ADD_FAILURE() << "the probe ran although KLOOP_DEVICES names the devices";
        return {};
    }
};

class VisibleDevicesTest : public ::testing::Test {
protected:
    never_runs m_runner;
    spec::op_spec m_cuda;
    void SetUp() override {
        m_cuda.backend = spec::backend_kind::cuda;
        ::setenv("KLOOP_DEVICES", "GPU-a, GPU-b,GPU-c", 1);
    }
    void TearDown() override { ::unsetenv("KLOOP_DEVICES"); }

    std::vector<std::string> ids(const spec::op_spec& s, const std::string& option) {
        std::vector<std::string> out;
        for (const auto& slot : eval::visible_devices(s, option, m_runner)) out.push_back(slot.id);
        return out;
    }
    void expect_refused(const spec::op_spec& s, const std::string& option, const std::string& words) {
        try {
            (void)eval::visible_devices(s, option, m_runner);
            ADD_FAILURE() << "accepted --devices " << option;
        } catch (const usage_error& e) {
            EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("--devices"), std::string::npos) << e.what();
        }
    }
};

TEST_F(VisibleDevicesTest, TheOptionPicksTheSlots) {
    EXPECT_EQ(ids(m_cuda, "1"), (std::vector<std::string>{""}));  // the default: unbound, as ever
    EXPECT_EQ(ids(m_cuda, ""), (std::vector<std::string>{""}));
    EXPECT_EQ(ids(m_cuda, "all"), (std::vector<std::string>{"GPU-a", "GPU-b", "GPU-c"}));
    EXPECT_EQ(ids(m_cuda, "2"), (std::vector<std::string>{"GPU-a", "GPU-b"}));
    EXPECT_EQ(ids(m_cuda, "GPU-c,GPU-a"), (std::vector<std::string>{"GPU-c", "GPU-a"}));
    EXPECT_EQ(ids(m_cuda, "0,3"), (std::vector<std::string>{"0", "3"}));
}

TEST_F(VisibleDevicesTest, Refusals) {
    expect_refused(m_cuda, "4", "only 3 device(s)");
    expect_refused(m_cuda, "0", "0 devices");
    expect_refused(m_cuda, "GPU-a,GPU-a", "named twice");
    spec::op_spec bb = m_cuda;
    bb.blackbox.emplace();
    expect_refused(bb, "all", "black-box");
    EXPECT_EQ(ids(bb, "1").size(), 1u);
    ::unsetenv("KLOOP_DEVICES");
    spec::op_spec cpu;
    cpu.backend = spec::backend_kind::cpu;
    expect_refused(cpu, "0,1", "CPU op");
}

}  // namespace
