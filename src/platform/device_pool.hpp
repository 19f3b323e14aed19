// kloop platform: independent jobs spread over the machine's devices, one job per device at a time.
//
// Responsibility: the scheduling half of "evaluate on every GPU of a host". A device_slot is what
// a job is pinned to: the value CUDA_VISIBLE_DEVICES gets (a GPU's UUID, "GPU-…", or an index),
// or nothing for the host (a CPU op: one timed run at a time on the machine). run_on_devices
// starts one worker thread per slot; each takes the next job, runs it with a command runner that
// adds CUDA_VISIBLE_DEVICES=<slot> (and KLOOP_DEVICE=<slot>) to every process it starts, and
// takes the next when it is done, so no two jobs ever share a device. Jobs are independent by
// contract (an A/B is one job: both of its sides run on its one device). The first exception a
// job throws is rethrown once every worker has stopped; after it (or an interruption) no new job
// starts. Which slots there are is the caller's business (eval/visible_devices).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "platform/subprocess.hpp"

namespace kloop::platform {

struct device_slot {
    std::string id;                        // CUDA_VISIBLE_DEVICES value; "" = the host, no binding
    std::string label;                     // for records and messages: the UUID, or "host"
};

// Forwards to `inner`, adding CUDA_VISIBLE_DEVICES and KLOOP_DEVICE = slot.id (when not empty).
class device_bound_runner final : public command_runner_base {
public:
    device_bound_runner(command_runner_base& inner, device_slot slot) : m_inner(inner), m_slot(std::move(slot)) {}
    [[nodiscard]] const device_slot& slot() const { return m_slot; }

protected:
    process_result do_run(const process_request& r) override;

private:
    command_runner_base& m_inner;
    device_slot m_slot;
};

// job(i, slot, runner) for every i in [0, jobs), at most one at a time per slot; returns when all
// ran (or the first failure and the jobs then running ended). `slots` must not be empty.
void run_on_devices(const std::vector<device_slot>& slots, std::size_t jobs, command_runner_base& inner,
                    const std::function<void(std::size_t, const device_slot&, command_runner_base&)>& job);

}  // namespace kloop::platform
