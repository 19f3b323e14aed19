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
constexpr nvml_return k_nvml_insufficient_size = 7;
constexpr int k_nvml_clock_sm = 1;
constexpr int k_nvml_clock_mem = 2;
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
using fn_int = nvml_return (*)(int*);
using fn_capability = nvml_return (*)(nvml_device, int*, int*);
using fn_memory = nvml_return (*)(nvml_device, unsigned long long*);     // nvmlMemory_t {total, free, used}
using fn_utilization = nvml_return (*)(nvml_device, unsigned*);          // nvmlUtilization_t {gpu, memory}
using fn_processes = nvml_return (*)(nvml_device, unsigned*, void*);     // count only (infos = nullptr)

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
    fn_uint power_limit = nullptr;
    fn_int cuda_driver_version = nullptr;
    fn_capability capability = nullptr;
    fn_memory memory = nullptr;
    fn_utilization utilization = nullptr;
    fn_processes processes = nullptr;
};

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
    sym(m_api->power_limit, "nvmlDeviceGetEnforcedPowerLimit");
    if (!sym(m_api->cuda_driver_version, "nvmlSystemGetCudaDriverVersion_v2"))
        sym(m_api->cuda_driver_version, "nvmlSystemGetCudaDriverVersion");
    sym(m_api->capability, "nvmlDeviceGetCudaComputeCapability");
    sym(m_api->memory, "nvmlDeviceGetMemoryInfo");
    sym(m_api->utilization, "nvmlDeviceGetUtilizationRates");
    if (!sym(m_api->processes, "nvmlDeviceGetComputeRunningProcesses_v3"))
        sym(m_api->processes, "nvmlDeviceGetComputeRunningProcesses");
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

unsigned nvml_loader::get_device_count() const {
    unsigned n = 0;
    if (!m_ready || m_api->device_count(&n) != k_nvml_success) return 0;
    return n;
}

std::string nvml_loader::get_cuda_driver_version() const {
    int v = 0;
    if (!m_ready || m_api->cuda_driver_version == nullptr || m_api->cuda_driver_version(&v) != k_nvml_success) return {};
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::optional<std::pair<int, int>> nvml_loader::get_compute_capability() const {
    int major = 0, minor = 0;
    if (!m_ready || m_device == nullptr || m_api->capability == nullptr ||
        m_api->capability(m_device, &major, &minor) != k_nvml_success)
        return std::nullopt;
    return std::make_pair(major, minor);
}

std::optional<std::uint64_t> nvml_loader::get_memory_total_bytes() const {
    unsigned long long m[3] = {0, 0, 0};
    if (!m_ready || m_device == nullptr || m_api->memory == nullptr || m_api->memory(m_device, m) != k_nvml_success)
        return std::nullopt;
    return m[0];
}

std::optional<std::pair<unsigned, unsigned>> nvml_loader::get_memory_clocks_mhz() const {
    unsigned now = 0, max = 0;
    if (!m_ready || m_device == nullptr || m_api->clock_info(m_device, k_nvml_clock_mem, &now) != k_nvml_success)
        return std::nullopt;
    if (m_api->max_clock_info(m_device, k_nvml_clock_mem, &max) != k_nvml_success) max = 0;
    return std::make_pair(now, max);
}

std::optional<unsigned> nvml_loader::get_power_limit_mw() const {
    unsigned p = 0;
    if (!m_ready || m_device == nullptr || m_api->power_limit == nullptr || m_api->power_limit(m_device, &p) != k_nvml_success)
        return std::nullopt;
    return p;
}

std::optional<unsigned> nvml_loader::get_utilization_pct() const {
    unsigned u[2] = {0, 0};
    if (!m_ready || m_device == nullptr || m_api->utilization == nullptr || m_api->utilization(m_device, u) != k_nvml_success)
        return std::nullopt;
    return u[0];
}

std::optional<int> nvml_loader::get_compute_process_count() const {
    unsigned n = 0;
    if (!m_ready || m_device == nullptr || m_api->processes == nullptr) return std::nullopt;
    const nvml_return r = m_api->processes(m_device, &n, nullptr);
    if (r != k_nvml_success && r != k_nvml_insufficient_size) return std::nullopt;
    return static_cast<int>(n);
}

}  // namespace kloop::backend::cuda
