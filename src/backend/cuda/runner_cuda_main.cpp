// kloop-runner-cuda: the child process for CUDA candidates (and their CPU or CUDA references).
// Thin; see runner/runner_main.hpp. Device 0 after CUDA_VISIBLE_DEVICES. With --probe-gpus it
// only reports the machine's GPUs for `kloop preflight` (backend/cuda/gpu_probe.hpp).
#include "backend/cuda/cuda_executor.hpp"
#include "backend/cuda/gpu_probe.hpp"
#include "backend/cuda/kernel_census.hpp"
#include "runner/host_executor.hpp"
#include "runner/runner_main.hpp"

#include <memory>
#include <string>


namespace {

// The kernel census (CUPTI) brackets the gate's checked calls only: its per-launch cost has no
// place near timed samples (backend/cuda/kernel_census.hpp). It is taken where the candidate
// runs: in the candidate host, which the checker starts with --census for a gate job.
bool wants_census(int argc, char** argv) {
    for (int i = 1; i < argc; ++i)
        if (std::string(argv[i]) == "--census") return true;
    return false;
}

// Outlives the executors (runner_main owns and destroys them before main returns).
std::unique_ptr<kloop::backend::cuda::kernel_census> g_census;

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--probe-gpus") return kloop::backend::cuda::probe_gpus_main(argc, argv);
    const bool gate = wants_census(argc, argv);
    return kloop::runner::runner_main(argc, argv, [gate](const std::string& device) -> std::unique_ptr<kloop::runner::executor_base> {
        if (device == "cpu") return std::make_unique<kloop::runner::host_executor>();
        if (device == "cuda") {
            auto exec = std::make_unique<kloop::backend::cuda::cuda_executor>(0);
            if (gate && !g_census) {
                g_census = std::make_unique<kloop::backend::cuda::kernel_census>();
                kloop::backend::cuda::attach_kernel_census(*exec, *g_census);
            }
            return exec;
        }
        return nullptr;
    });
}
