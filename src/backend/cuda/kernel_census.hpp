// kloop backend/cuda: the kernel census — every GPU kernel a checked call ran, seen by CUPTI.
//
// Responsibility: bracket each checked call (the cuda_executor's call observer: begin just
// before the entry point, end after the device-wide synchronisation) with a CUPTI activity
// capture of CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL — every kernel of the process, launched
// through the runtime or the driver API (cuBLAS launches nvjet_* with cuLaunchKernelEx), on any
// stream, by any thread, device-side launches included — and hand the list to the runner as the
// JSON that check/census_rules judges:
//
//   {"available": true, "kernels": [{"name", "demangled", "grid": [x,y,z], "block": [x,y,z],
//     "start_ns", "end_ns", "duration_ns", "stream", "registers", "static_smem",
//     "dynamic_smem", "device_launched", "graph_id"}, …], "dropped": 0, "window_ns": …}
//
// CUPTI is loaded with dlopen ($KLOOP_CUPTI_LIB, else libcupti.so.13 on the loader's path, else
// $CUDA_HOME/lib64, /usr/local/cuda/lib64, /usr/local/cuda/extras/CUPTI/lib64), so the runner
// starts where libcupti is missing; the census is then {"available": false, "reason": …}. Only
// one CUPTI subscriber per process exists on CUDA 13.0: under ncu, nsys or another tracer the
// enable call fails and the census is "unavailable" for the same reason (gpu-tools.md §0).
//
// Cost: CUPTI adds ~2.5 µs of host time to every launch while enabled (gpu-tools.md §2.1), so
// the census runs in the gate only; a bench runner never creates one (or pauses it).
//
// One instance per process (CUPTI's buffer callbacks are process-wide); a second one reports
// itself unavailable. Construct it before the candidate's first launch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace kloop::backend::cuda {

class cuda_executor;

class kernel_census {
public:
    kernel_census();
    ~kernel_census();
    kernel_census(const kernel_census&) = delete;
    kernel_census& operator=(const kernel_census&) = delete;

    [[nodiscard]] bool is_available() const noexcept;
    // Why the census is unavailable ("cannot load CUPTI: …", "cuptiActivityEnable: …"); empty when available.
    [[nodiscard]] const std::string& get_unavailable_reason() const noexcept;
    // The CUPTI library that was loaded (for the runner's start event).
    [[nodiscard]] const std::string& get_library_path() const noexcept;

    // Start a window: flush and discard every record so far (reference kernels, uploads).
    void begin();
    // Close the window (the caller has synchronised the device): flush, keep this window's kernels.
    void end();
    // The last window's census (see the header comment), then forget it. Unavailable: the
    // {"available": false, "reason": …} form. Never throws.
    [[nodiscard]] nlohmann::json take();

    // Stop / restart recording (a bench phase, a profiler pass).
    void pause();
    void resume();

    // begin/end as a cuda_executor call observer.
    [[nodiscard]] std::function<void(bool)> observer();

    struct impl;  // public only so the CUPTI buffer callbacks (free functions) can reach it

private:
    std::unique_ptr<impl> m;
};

// Wires `census` into `exec`: its call observer brackets every checked call, and every
// call_outcome of exec.invoke() carries the census (executor_base::set_census_provider).
// Both must outlive the calls; call once, in the gate runner, before the candidate runs.
void attach_kernel_census(cuda_executor& exec, kernel_census& census);

}  // namespace kloop::backend::cuda
