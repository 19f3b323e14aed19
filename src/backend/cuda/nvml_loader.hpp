// kloop backend/cuda: NVML loaded at run time with dlopen (no nvml.h, no link-time dependency).
//
// Responsibility: the few NVML queries kloop needs — current and max SM clock, the clock event
// (throttle) reason mask, temperature, power, names — from libnvidia-ml.so.1 when the driver has
// one, and a clear "unavailable" (with the reason) when it does not, so callers fall back
// gracefully (the CUDA executor then uses its clock64/globaltimer probe). Function pointer types
// are declared here from the CUDA 13.0 nvml.h signatures (gpu-tools.md §3): enums are int,
// handles are opaque pointers. Host-only, on the runner's side: the CUDA executor and the GPU
// probe (gpu_probe.hpp) are its only users, so kloop's own process never loads NVML.
//
// Thread safety: one object per thread, or external locking. nvmlInit_v2 in the constructor,
// nvmlShutdown in the destructor (NVML reference-counts them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "platform/gpu_facts.hpp"

namespace kloop::backend::cuda {

// The reason bits and their names are platform's (gpu_facts.hpp): the probe, the executor and
// preflight's nvidia-smi fallback share them.
namespace clock_event_reason = platform::clock_event_reason;
using platform::describe_clock_event_reasons;

struct nvml_clock_sample {
    unsigned sm_clock_mhz = 0;
    unsigned max_sm_clock_mhz = 0;
    std::uint64_t event_reasons = 0;
    bool reasons_known = false;
};

class nvml_loader {
public:
    // Loads the library (path: default "libnvidia-ml.so.1") and initialises NVML. Never throws:
    // check is_available() / get_error().
    explicit nvml_loader(const char* library = "libnvidia-ml.so.1");
    ~nvml_loader();
    nvml_loader(const nvml_loader&) = delete;
    nvml_loader& operator=(const nvml_loader&) = delete;

    [[nodiscard]] bool is_available() const noexcept { return m_ready; }
    // Why NVML is unavailable ("dlopen libnvidia-ml.so.1: …", "nvmlInit_v2: …"); empty when available.
    [[nodiscard]] const std::string& get_error() const noexcept { return m_error; }

    // Selects the device by its UUID ("GPU-…" or the bare form cudaDeviceProp::uuid gives); falls
    // back to `index` when no UUID matches. False when no device could be selected.
    bool select_device(const std::string& uuid, unsigned index);
    [[nodiscard]] bool has_device() const noexcept { return m_device != nullptr; }

    // The SM clock and the clock event reasons; the max SM clock too with `with_max` (a constant:
    // read it once — each NVML query is a driver round trip, ~0.5 ms on the H200 host).
    [[nodiscard]] std::optional<nvml_clock_sample> sample_clocks(bool with_max = false) const;
    [[nodiscard]] std::optional<unsigned> get_temperature_c() const;
    [[nodiscard]] std::optional<unsigned> get_power_mw() const;
    [[nodiscard]] std::string get_device_name() const;
    [[nodiscard]] std::string get_device_uuid() const;
    [[nodiscard]] std::string get_driver_version() const;
    // What `kloop-runner-cuda --probe-gpus` reports (backend/cuda/gpu_probe.hpp).
    [[nodiscard]] unsigned get_device_count() const;
    [[nodiscard]] std::string get_cuda_driver_version() const;                 // "13.0"
    [[nodiscard]] std::optional<std::pair<int, int>> get_compute_capability() const;
    [[nodiscard]] std::optional<std::uint64_t> get_memory_total_bytes() const;
    [[nodiscard]] std::optional<std::pair<unsigned, unsigned>> get_memory_clocks_mhz() const;  // current, max
    [[nodiscard]] std::optional<unsigned> get_power_limit_mw() const;
    [[nodiscard]] std::optional<unsigned> get_utilization_pct() const;
    [[nodiscard]] std::optional<int> get_compute_process_count() const;       // processes with a context

private:
    struct api;
    void* m_lib = nullptr;
    api* m_api = nullptr;
    void* m_device = nullptr;   // nvmlDevice_t
    bool m_ready = false;
    std::string m_error;
};

}  // namespace kloop::backend::cuda
