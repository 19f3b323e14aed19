// kloop runner: the shared main of the runner executables.
//
// Responsibility: parse `--job FILE --events FILE`, read the job, pick an executor for each side
// from the devices this runner binary supports, and run it. kloop-runner supports "cpu";
// kloop-runner-cuda (backend/cuda) adds "cuda". Exit status: 0 job ran to the end, 2 bad
// arguments or job, 3 library, entry point or device unusable.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "runner/executor.hpp"

namespace kloop::runner {

// Returns an executor for a device name, or nullptr when this binary does not support it.
using executor_factory = std::function<std::unique_ptr<executor_base>(const std::string& device)>;

int runner_main(int argc, char** argv, const executor_factory& make_executor);

}  // namespace kloop::runner
