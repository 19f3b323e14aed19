// kloop backend/cuda: NVML through dlopen (see nvml_loader.hpp).
#include "backend/cuda/nvml_loader.hpp"

#include <dlfcn.h>

#include <cstring>

namespace kloop::backend::cuda {

namespace {

// The C types of nvml.h, declared by hand: enums are int, handles opaque.
using nvml_return = int;
using nvml_device = void*;
constexpr nvml_return k_nvml_success = 0;
constexpr int k_nvml_clock_sm = 1;
constexpr int k_nvml_temperature_gpu = 0;
constexpr unsigned k_buffer = 96;  // NVML_DEVICE_NAME_V2_BUFFER_SIZE / _UUID_V2_

using fn_void = nvml_return (*)();
using fn_error_string = const char* (*)(nvml_return);
using fn_count = nvml_return (*)(unsigned*);
using fn_handle_by_index = nvml_return (*)(unsigned, nvml_device*);
using fn_string = nvml_return (*)(nvml_device, char*, unsigned);
using fn_sys_string = nvml_return (*)(char*, unsigned);
using fn_clock = nvml_return (*)(nvml_device, int, unsigned*);
using fn_reasons = nvml_return (*)(nvml_device, unsigned long long*);
using fn_temperature = nvml_return (*)(nvml_device, int, unsigned*);
using fn_uint = nvml_return (*)(nvml_device, unsigned*);

}  // namespace

struct nvml_loader::api {
    fn_void init = nullptr;
    fn_void shutdown = nullptr;
    fn_error_string error_string = nullptr;
    fn_count device_count = nullptr;
    fn_handle_by_index handle_by_index = nullptr;
    fn_string name = nullptr;
    fn_string uuid = nullptr;
    fn_sys_string driver_version = nullptr;
    fn_clock clock_info = nullptr;
    fn_clock max_clock_info = nullptr;
    fn_reasons reasons = nullptr;
    fn_temperature temperature = nullptr;
    fn_uint power = nullptr;
};

std::string describe_clock_event_reasons(std::uint64_t mask) {
    if (mask == 0) return "none";
    static const std::pair<std::uint64_t, const char*> names[] = {
        {clock_event_reason::gpu_idle, "gpu_idle"},
        {clock_event_reason::applications_clocks_setting, "applications_clocks_setting"},
        {clock_event_reason::sw_power_cap, "sw_power_cap"},
        {clock_event_reason::hw_slowdown, "hw_slowdown"},
        {clock_event_reason::sync_boost, "sync_boost"},
        {clock_event_reason::sw_thermal_slowdown, "sw_thermal_slowdown"},
        {clock_event_reason::hw_thermal_slowdown, "hw_thermal_slowdown"},
        {clock_event_reason::hw_power_brake_slowdown, "hw_power_brake_slowdown"},
        {clock_event_reason::display_clock_setting, "display_clock_setting"}};
    std::string s;
    std::uint64_t rest = mask;
    for (const auto& [bit, name] : names)
        if (mask & bit) {
            s += (s.empty() ? "" : "|") + std::string(name);
            rest &= ~bit;
        }
    if (rest != 0) s += (s.empty() ? "" : "|") + std::string("0x") + [&] {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(rest));
        return std::string(buf);
    }();
    return s;
}

nvml_loader::nvml_loader(const char* library) {
    m_lib = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (m_lib == nullptr) {
        const char* e = ::dlerror();
        m_error = std::string("dlopen ") + library + ": " + (e ? e : "unknown error");
        return;
    }
    m_api = new api;
    auto sym = [&](auto& f, const char* name) {
        f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(::dlsym(m_lib, name));
        return f != nullptr;
    };
    const bool required = sym(m_api->init, "nvmlInit_v2") && sym(m_api->shutdown, "nvmlShutdown") &&
                          sym(m_api->device_count, "nvmlDeviceGetCount_v2") &&
                          sym(m_api->handle_by_index, "nvmlDeviceGetHandleByIndex_v2") &&
                          sym(m_api->clock_info, "nvmlDeviceGetClockInfo") &&
                          sym(m_api->max_clock_info, "nvmlDeviceGetMaxClockInfo");
    sym(m_api->error_string, "nvmlErrorString");
    sym(m_api->name, "nvmlDeviceGetName");
    sym(m_api->uuid, "nvmlDeviceGetUUID");
    sym(m_api->driver_version, "nvmlSystemGetDriverVersion");
    if (!sym(m_api->reasons, "nvmlDeviceGetCurrentClocksEventReasons"))
        sym(m_api->reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");  // deprecated alias
    sym(m_api->temperature, "nvmlDeviceGetTemperature");
    sym(m_api->power, "nvmlDeviceGetPowerUsage");
    if (!required) {
        m_error = std::string(library) + " lacks a required NVML function";
        return;
    }
    const nvml_return rc = m_api->init();
    if (rc != k_nvml_success) {
        m_error = std::string("nvmlInit_v2: ") + (m_api->error_string ? m_api->error_string(rc) : "error") +
                  " (" + std::to_string(rc) + ")";
        return;
    }
    m_ready = true;
}

nvml_loader::~nvml_loader() {
    if (m_ready && m_api->shutdown) m_api->shutdown();
    delete m_api;
    if (m_lib != nullptr) ::dlclose(m_lib);
}

bool nvml_loader::select_device(const std::string& uuid, unsigned index) {
    if (!m_ready) return false;
    unsigned n = 0;
    if (m_api->device_count(&n) != k_nvml_success) return false;
    auto bare = [](std::string u) { return u.rfind("GPU-", 0) == 0 ? u.substr(4) : u; };
    if (!uuid.empty() && m_api->uuid != nullptr) {
        for (unsigned i = 0; i < n; ++i) {
            nvml_device d = nullptr;
            char buf[k_buffer] = {};
            if (m_api->handle_by_index(i, &d) == k_nvml_success && m_api->uuid(d, buf, k_buffer) == k_nvml_success &&
                bare(buf) == bare(uuid)) {
                m_device = d;
                return true;
            }
        }
    }
    nvml_device d = nullptr;
    if (index < n && m_api->handle_by_index(index, &d) == k_nvml_success) {
        m_device = d;
        return true;
    }
    return false;
}

std::optional<nvml_clock_sample> nvml_loader::sample_clocks(bool with_max) const {
    if (!m_ready || m_device == nullptr) return std::nullopt;
    nvml_clock_sample s;
    if (m_api->clock_info(m_device, k_nvml_clock_sm, &s.sm_clock_mhz) != k_nvml_success) return std::nullopt;
    if (with_max && m_api->max_clock_info(m_device, k_nvml_clock_sm, &s.max_sm_clock_mhz) != k_nvml_success)
        s.max_sm_clock_mhz = 0;
    unsigned long long mask = 0;
    if (m_api->reasons != nullptr && m_api->reasons(m_device, &mask) == k_nvml_success) {
        s.event_reasons = mask;
        s.reasons_known = true;
    }
    return s;
}

std::optional<unsigned> nvml_loader::get_temperature_c() const {
    unsigned t = 0;
    if (!m_ready || m_device == nullptr || m_api->temperature == nullptr ||
        m_api->temperature(m_device, k_nvml_temperature_gpu, &t) != k_nvml_success)
        return std::nullopt;
    return t;
}

std::optional<unsigned> nvml_loader::get_power_mw() const {
    unsigned p = 0;
    if (!m_ready || m_device == nullptr || m_api->power == nullptr || m_api->power(m_device, &p) != k_nvml_success)
        return std::nullopt;
    return p;
}

std::string nvml_loader::get_device_name() const {
    char buf[k_buffer] = {};
    if (!m_ready || m_device == nullptr || m_api->name == nullptr || m_api->name(m_device, buf, k_buffer) != k_nvml_success)
        return {};
    return buf;
}

std::string nvml_loader::get_device_uuid() const {
    char buf[k_buffer] = {};
    if (!m_ready || m_device == nullptr || m_api->uuid == nullptr || m_api->uuid(m_device, buf, k_buffer) != k_nvml_success)
        return {};
    return buf;
}

std::string nvml_loader::get_driver_version() const {
    char buf[80] = {};
    if (!m_ready || m_api->driver_version == nullptr || m_api->driver_version(buf, sizeof buf) != k_nvml_success) return {};
    return buf;
}

}  // namespace kloop::backend::cuda
