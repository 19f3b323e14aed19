// kloop backend/cuda: NVML loaded at run time with dlopen (no nvml.h, no link-time dependency).
//
// Responsibility: the few NVML queries kloop needs — current and max SM clock, the clock event
// (throttle) reason mask, temperature, power, names — from libnvidia-ml.so.1 when the driver has
// one, and a clear "unavailable" (with the reason) when it does not, so callers fall back
// gracefully (the CUDA executor then uses its clock64/globaltimer probe). Function pointer types
// are declared here from the CUDA 13.0 nvml.h signatures (gpu-tools.md §3): enums are int,
// handles are opaque pointers. Host-only: usable by the orchestrator (preflight) and the runner.
//
// Thread safety: one object per thread, or external locking. nvmlInit_v2 in the constructor,
// nvmlShutdown in the destructor (NVML reference-counts them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kloop::backend::cuda {

// Reason bits of nvmlDeviceGetCurrentClocksEventReasons (nvml.h, CUDA 13.0).
namespace clock_event_reason {
inline constexpr std::uint64_t gpu_idle = 0x1;
inline constexpr std::uint64_t applications_clocks_setting = 0x2;
inline constexpr std::uint64_t sw_power_cap = 0x4;
inline constexpr std::uint64_t hw_slowdown = 0x8;
inline constexpr std::uint64_t sync_boost = 0x10;
inline constexpr std::uint64_t sw_thermal_slowdown = 0x20;
inline constexpr std::uint64_t hw_thermal_slowdown = 0x40;
inline constexpr std::uint64_t hw_power_brake_slowdown = 0x80;
inline constexpr std::uint64_t display_clock_setting = 0x100;
}  // namespace clock_event_reason

// "sw_power_cap|hw_thermal_slowdown" for a mask; "none" for 0.
[[nodiscard]] std::string describe_clock_event_reasons(std::uint64_t mask);

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

private:
    struct api;
    void* m_lib = nullptr;
    api* m_api = nullptr;
    void* m_device = nullptr;   // nvmlDevice_t
    bool m_ready = false;
    std::string m_error;
};

}  // namespace kloop::backend::cuda
