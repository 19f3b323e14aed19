// kloop eval: which devices independent evaluations may be spread over (`--devices`).
//
// Responsibility: from the option to the slots platform/device_pool runs jobs on.
//   "1" (the default)  one slot with no binding: everything runs where it runs today;
//   "all"              every GPU the CUDA runner's probe reports (kloop-runner-cuda --probe-gpus,
//                      after CUDA_VISIBLE_DEVICES), bound by UUID;
//   "N"                the first N of those;
//   "GPU-…,GPU-…", "0,2"  those, as given (a UUID or an index CUDA_VISIBLE_DEVICES understands).
// $KLOOP_DEVICES (a comma list) stands in for the probe's answer: the slots of "all" and "N"
// come from it, unchecked — for a machine whose probe cannot run, and for tests with fake
// devices. A black-box op takes one slot only (its commands run under `env -i` with kloop's own
// CUDA_VISIBLE_DEVICES, which a slot cannot change), and so does a CPU op unless KLOOP_DEVICES
// names slots (a CPU op is timed on the host, one timed run at a time). Errors name the option.
#pragma once

#include <string>
#include <vector>

#include "platform/device_pool.hpp"
#include "platform/subprocess.hpp"
#include "spec/op_spec.hpp"

namespace kloop::eval {

[[nodiscard]] std::vector<platform::device_slot> visible_devices(const spec::op_spec& spec, const std::string& option,
                                                                 platform::command_runner_base& commands);

}  // namespace kloop::eval
