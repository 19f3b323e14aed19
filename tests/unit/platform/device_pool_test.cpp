// Unit under test: platform/device_pool — independent jobs spread over device slots, one job per
// slot at a time, every process a job starts bound to its slot's device.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "platform/device_pool.hpp"

using namespace kloop::platform;

namespace {

// Records every request's environment overrides; "runs" for a few milliseconds.
class recording_runner final : public command_runner_base {
public:
    std::mutex mutex;
    std::vector<process_request> seen;

protected:
    process_result do_run(const process_request& r) override {
        {
            const std::lock_guard<std::mutex> lock(mutex);
            seen.push_back(r);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        process_result res;
        res.started = true;
        res.exit_code = 0;
        return res;
    }
};

std::string env_of(const process_request& r, const std::string& name) {
    for (const auto& [k, v] : r.env_overrides)
        if (k == name) return v;
    return "<unset>";
}

TEST(DevicePoolTest, EveryJobRunsOnceNeverTwoAtATimeOnOneDeviceAndItsProcessesAreBound) {
    recording_runner inner;
    const std::vector<device_slot> slots{{"GPU-a", "GPU-a"}, {"GPU-b", "GPU-b"}};
    std::mutex m;
    std::map<std::string, int> active, peak;
    std::multiset<std::size_t> ran;
    std::map<std::size_t, std::string> where;
    run_on_devices(slots, 8, inner, [&](std::size_t i, const device_slot& slot, command_runner_base& runner) {
        {
            const std::lock_guard<std::mutex> lock(m);
            peak[slot.id] = std::max(peak[slot.id], ++active[slot.id]);
            ran.insert(i);
            where[i] = slot.id;
        }
        process_request req;
        req.argv = {"job", std::to_string(i)};
        (void)runner.run(req);
        const std::lock_guard<std::mutex> lock(m);
        --active[slot.id];
    });
    EXPECT_EQ(ran.size(), 8u);
    for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(ran.count(i), 1u) << i;
    EXPECT_EQ(peak["GPU-a"], 1);
    EXPECT_EQ(peak["GPU-b"], 1);
    ASSERT_EQ(inner.seen.size(), 8u);
    for (const auto& r : inner.seen) {
        const auto job = static_cast<std::size_t>(std::stoul(r.argv.at(1)));
        EXPECT_EQ(env_of(r, "CUDA_VISIBLE_DEVICES"), where.at(job));
        EXPECT_EQ(env_of(r, "KLOOP_DEVICE"), where.at(job));
    }
}

TEST(DevicePoolTest, BothDevicesWorkAtOnce) {
    recording_runner inner;
    const std::vector<device_slot> slots{{"0", "0"}, {"1", "1"}};
    std::atomic<int> running{0}, max_running{0};
    run_on_devices(slots, 6, inner, [&](std::size_t, const device_slot&, command_runner_base&) {
        const int now = ++running;
        int seen = max_running.load();
        while (now > seen && !max_running.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        --running;
    });
    EXPECT_EQ(max_running.load(), 2);
}

TEST(DevicePoolTest, AnUnboundSlotChangesNothing) {
    recording_runner inner;
    run_on_devices({device_slot{"", "default"}}, 2, inner, [](std::size_t, const device_slot&, command_runner_base& r) {
        process_request req;
        req.argv = {"x"};
        (void)r.run(req);
    });
    ASSERT_EQ(inner.seen.size(), 2u);
    for (const auto& r : inner.seen) EXPECT_TRUE(r.env_overrides.empty());
}

TEST(DevicePoolTest, AFailureStopsNewJobsAndIsRethrownAfterTheOthersEnd) {
    recording_runner inner;
    std::atomic<int> started{0};
    EXPECT_THROW(run_on_devices({device_slot{"0", "0"}}, 10, inner,
                                [&](std::size_t i, const device_slot&, command_runner_base&) {
                                    ++started;
                                    if (i == 2) throw std::runtime_error("job 2 failed");
                                }),
                 std::runtime_error);
    EXPECT_EQ(started.load(), 3);  // one device: jobs 0, 1, 2, then nothing more
}

}  // namespace
