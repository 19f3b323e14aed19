// kloop platform: jobs spread over devices, one per device at a time (see device_pool.hpp).
#include "platform/device_pool.hpp"

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.hpp"

namespace kloop::platform {

process_result device_bound_runner::do_run(const process_request& r) {
    if (m_slot.id.empty()) return m_inner.run(r);
    process_request bound = r;
    bound.env_overrides.emplace_back("CUDA_VISIBLE_DEVICES", m_slot.id);
    bound.env_overrides.emplace_back("KLOOP_DEVICE", m_slot.id);
    return m_inner.run(bound);
}

void run_on_devices(const std::vector<device_slot>& slots, std::size_t jobs, command_runner_base& inner,
                    const std::function<void(std::size_t, const device_slot&, command_runner_base&)>& job) {
    if (slots.empty()) throw internal_error("run_on_devices: no device slot");
    std::atomic<std::size_t> next{0};
    std::atomic<bool> stop{false};
    std::mutex failure_mutex;
    std::exception_ptr failure;
    auto worker = [&](const device_slot& slot) {
        device_bound_runner runner(inner, slot);
        while (!stop.load() && !interrupt_requested()) {
            const std::size_t i = next.fetch_add(1);
            if (i >= jobs) return;
            try {
                job(i, slot, runner);
            } catch (...) {
                const std::lock_guard<std::mutex> lock(failure_mutex);
                if (!failure) failure = std::current_exception();
                stop = true;
                return;
            }
        }
    };
    if (slots.size() == 1) {
        worker(slots.front());
    } else {
        std::vector<std::thread> threads;
        threads.reserve(slots.size());
        for (const auto& s : slots) threads.emplace_back(worker, std::cref(s));
        for (auto& t : threads) t.join();
    }
    if (failure) std::rethrow_exception(failure);
    if (interrupt_requested() && next.load() < jobs) throw error(exit_code::interrupted, "interrupted");
}

}  // namespace kloop::platform
