// kloop platform: preflight facts (see preflight.hpp).
#include "platform/preflight.hpp"

#include "platform/confinement.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <type_traits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kloop/version.hpp"
#include "platform/host_info.hpp"
#include "platform/subprocess.hpp"

namespace kloop::platform {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r\n");
    if (b == std::string_view::npos) return "";
    const auto e = s.find_last_not_of(" \t\r\n");
    return std::string(s.substr(b, e - b + 1));
}

std::vector<std::string> split(std::string_view s, char sep) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (true) {
        const auto p = s.find(sep, start);
        out.push_back(trim(s.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start)));
        if (p == std::string_view::npos) break;
        start = p + 1;
    }
    return out;
}

template <class T>
bool parse_number(const std::string& s, T& out) {
    if (s.empty() || s == "[N/A]" || s == "N/A" || s.find("Not Supported") != std::string::npos) return false;
    try {
        std::size_t used = 0;
        if constexpr (std::is_floating_point_v<T>) out = static_cast<T>(std::stod(s, &used));
        else out = static_cast<T>(std::stoull(s, &used, 0));
        return used > 0;
    } catch (...) {
        return false;
    }
}


tool_info probe_tool(command_runner_base& commands, const std::string& name, std::vector<std::string> version_args,
                     double timeout_s) {
    tool_info t;
    t.name = name;
    t.path = find_tool(name);
    if (t.path.empty()) {
        t.error = "not found on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin";
        return t;
    }
    t.found = true;
    process_request r;
    r.argv = {t.path};
    r.argv.insert(r.argv.end(), version_args.begin(), version_args.end());
    r.timeout_s = timeout_s;
    const auto res = commands.run(r);
    const auto text = res.stdout_text + "\n" + res.stderr_text;
    if (!res.succeeded() && trim(text).empty()) t.error = res.describe();
    t.version = parse_tool_version(text);
    return t;
}

std::string utc_now() {
    const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// ---- NVML (no nvml.h: enums are int, handles opaque; signatures per gpu-tools.md §3) ----------
struct nvml_api {
    using dev = void*;
    int (*init)() = nullptr;
    int (*shutdown)() = nullptr;
    int (*count)(unsigned*) = nullptr;
    int (*handle)(unsigned, dev*) = nullptr;
    int (*name)(dev, char*, unsigned) = nullptr;
    int (*uuid)(dev, char*, unsigned) = nullptr;
    int (*driver)(char*, unsigned) = nullptr;
    int (*cuda_driver)(int*) = nullptr;
    int (*clock)(dev, int, unsigned*) = nullptr;
    int (*max_clock)(dev, int, unsigned*) = nullptr;
    int (*reasons)(dev, unsigned long long*) = nullptr;
    int (*temperature)(dev, int, unsigned*) = nullptr;
    int (*power)(dev, unsigned*) = nullptr;
    int (*power_limit)(dev, unsigned*) = nullptr;
    int (*memory)(dev, unsigned long long*) = nullptr;  // nvmlMemory_t {total, free, used}
    int (*capability)(dev, int*, int*) = nullptr;
    int (*utilization)(dev, unsigned*) = nullptr;       // nvmlUtilization_t {gpu, memory}
    int (*processes)(dev, unsigned*, void*) = nullptr;  // count only (infos = nullptr)
};
constexpr int k_nvml_success = 0;
constexpr int k_nvml_insufficient_size = 7;
constexpr int k_clock_sm = 1, k_clock_mem = 2;

struct nvml_session {
    void* lib = nullptr;
    nvml_api api;
    bool ok = false;
    std::string error;

    nvml_session() {
        lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) {
            const char* e = ::dlerror();
            error = e != nullptr ? e : "libnvidia-ml.so.1 not found";
            return;
        }
        auto sym = [&](auto& fn, const char* name, const char* alt = nullptr) {
            void* p = ::dlsym(lib, name);
            if (p == nullptr && alt != nullptr) p = ::dlsym(lib, alt);
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
        };
        sym(api.init, "nvmlInit_v2");
        sym(api.shutdown, "nvmlShutdown");
        sym(api.count, "nvmlDeviceGetCount_v2");
        sym(api.handle, "nvmlDeviceGetHandleByIndex_v2");
        sym(api.name, "nvmlDeviceGetName");
        sym(api.uuid, "nvmlDeviceGetUUID");
        sym(api.driver, "nvmlSystemGetDriverVersion");
        sym(api.cuda_driver, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion");
        sym(api.clock, "nvmlDeviceGetClockInfo");
        sym(api.max_clock, "nvmlDeviceGetMaxClockInfo");
        sym(api.reasons, "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons");
        sym(api.temperature, "nvmlDeviceGetTemperature");
        sym(api.power, "nvmlDeviceGetPowerUsage");
        sym(api.power_limit, "nvmlDeviceGetEnforcedPowerLimit");
        sym(api.memory, "nvmlDeviceGetMemoryInfo");
        sym(api.capability, "nvmlDeviceGetCudaComputeCapability");
        sym(api.utilization, "nvmlDeviceGetUtilizationRates");
        sym(api.processes, "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses");
        if (!api.init || !api.count || !api.handle) {
            error = "libnvidia-ml.so.1 lacks nvmlInit_v2 / nvmlDeviceGetCount_v2";
            return;
        }
        if (const int r = api.init(); r != k_nvml_success) {
            error = "nvmlInit_v2 returned " + std::to_string(r) + (r == 9 ? " (driver not loaded)" : "");
            return;
        }
        ok = true;
    }
    ~nvml_session() {
        if (ok && api.shutdown) api.shutdown();
        // the library stays loaded: unloading NVML is not worth the risk
    }
};

void nvml_sample(const nvml_api& api, void* d, clock_sample& s) {
    if (api.clock) api.clock(d, k_clock_sm, &s.sm_clock_mhz);
    unsigned long long m = 0;
    if (api.reasons && api.reasons(d, &m) == k_nvml_success) s.event_reasons = m;
    unsigned u[2] = {0, 0};
    if (api.utilization && api.utilization(d, u) == k_nvml_success) s.utilization_pct = u[0];
}

gpu_info nvml_device(const nvml_api& api, unsigned i) {
    gpu_info g;
    g.index = static_cast<int>(i);
    g.source = "nvml";
    void* d = nullptr;
    if (api.handle(i, &d) != k_nvml_success) return g;
    char buf[128] = {};
    if (api.name && api.name(d, buf, sizeof buf) == k_nvml_success) g.name = buf;
    if (api.uuid && api.uuid(d, buf, sizeof buf) == k_nvml_success) g.uuid = buf;
    if (api.capability) api.capability(d, &g.cc_major, &g.cc_minor);
    unsigned long long mem[3] = {0, 0, 0};
    if (api.memory && api.memory(d, mem) == k_nvml_success) g.memory_bytes = mem[0];
    if (api.clock) {
        api.clock(d, k_clock_sm, &g.sm_clock_mhz);
        api.clock(d, k_clock_mem, &g.mem_clock_mhz);
    }
    if (api.max_clock) {
        api.max_clock(d, k_clock_sm, &g.max_sm_clock_mhz);
        api.max_clock(d, k_clock_mem, &g.max_mem_clock_mhz);
    }
    unsigned long long reasons = 0;
    if (api.reasons && api.reasons(d, &reasons) == k_nvml_success) g.event_reasons = reasons;
    unsigned v = 0;
    if (api.temperature && api.temperature(d, 0, &v) == k_nvml_success) g.temperature_c = v;
    if (api.power && api.power(d, &v) == k_nvml_success) g.power_w = v / 1000.0;
    if (api.power_limit && api.power_limit(d, &v) == k_nvml_success) g.power_limit_w = v / 1000.0;
    unsigned u[2] = {0, 0};
    if (api.utilization && api.utilization(d, u) == k_nvml_success) g.utilization_pct = u[0];
    if (api.processes) {
        unsigned n = 0;
        const int r = api.processes(d, &n, nullptr);
        if (r == k_nvml_success || r == k_nvml_insufficient_size) g.compute_processes = static_cast<int>(n);
    }
    return g;
}

// ---- CUDA driver API: SMs and L2 (NVML has neither); cuInit creates no context -----------------
struct driver_device {
    std::string name, uuid;
    int cc_major = -1, cc_minor = -1, sm_count = -1;
    std::uint64_t l2_bytes = 0, memory_bytes = 0;
};

std::string format_uuid(const unsigned char b[16]) {
    return fmt::format("GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}", b[0],
                       b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

std::vector<driver_device> driver_devices(std::string& error, std::string& api_version) {
    std::vector<driver_device> out;
    void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        const char* e = ::dlerror();
        error = e != nullptr ? e : "libcuda.so.1 not found";
        return out;
    }
    using fn_init = int (*)(unsigned);
    using fn_int = int (*)(int*);
    using fn_get = int (*)(int*, int);
    using fn_attr = int (*)(int*, int, int);
    using fn_name = int (*)(char*, int, int);
    using fn_mem = int (*)(std::size_t*, int);
    using fn_uuid = int (*)(unsigned char*, int);
    const auto init = reinterpret_cast<fn_init>(::dlsym(lib, "cuInit"));
    const auto version = reinterpret_cast<fn_int>(::dlsym(lib, "cuDriverGetVersion"));
    const auto count = reinterpret_cast<fn_int>(::dlsym(lib, "cuDeviceGetCount"));
    const auto get = reinterpret_cast<fn_get>(::dlsym(lib, "cuDeviceGet"));
    const auto attr = reinterpret_cast<fn_attr>(::dlsym(lib, "cuDeviceGetAttribute"));
    const auto name = reinterpret_cast<fn_name>(::dlsym(lib, "cuDeviceGetName"));
    const auto mem = reinterpret_cast<fn_mem>(::dlsym(lib, "cuDeviceTotalMem_v2"));
    const auto uuid = reinterpret_cast<fn_uuid>(::dlsym(lib, "cuDeviceGetUuid_v2"));
    if (!init || !count || !get || !attr) {
        error = "libcuda.so.1 lacks the device query functions";
        return out;
    }
    int v = 0;
    if (version && version(&v) == 0) api_version = fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
    if (const int r = init(0); r != 0) {
        error = "cuInit returned " + std::to_string(r) + (r == 100 ? " (no CUDA-capable device)" : "");
        return out;
    }
    int n = 0;
    if (count(&n) != 0) n = 0;
    for (int i = 0; i < n; ++i) {
        int dev = 0;
        if (get(&dev, i) != 0) continue;
        driver_device d;
        int value = 0;
        if (attr(&value, 16, dev) == 0) d.sm_count = value;                       // MULTIPROCESSOR_COUNT
        if (attr(&value, 38, dev) == 0) d.l2_bytes = static_cast<std::uint64_t>(value);  // L2_CACHE_SIZE
        attr(&d.cc_major, 75, dev);                                               // COMPUTE_CAPABILITY_MAJOR
        attr(&d.cc_minor, 76, dev);                                               // COMPUTE_CAPABILITY_MINOR
        char buf[256] = {};
        if (name && name(buf, sizeof buf, dev) == 0) d.name = buf;
        std::size_t bytes = 0;
        if (mem && mem(&bytes, dev) == 0) d.memory_bytes = bytes;
        unsigned char u[16] = {};
        if (uuid && uuid(u, dev) == 0) d.uuid = format_uuid(u);
        out.push_back(d);
    }
    if (n == 0 && error.empty()) error = "the driver reports no CUDA device";
    return out;
}

void merge_driver(gpu_info& g, const driver_device& d) {
    if (g.name.empty()) g.name = d.name;
    if (g.uuid.empty()) g.uuid = d.uuid;
    if (g.cc_major < 0) {
        g.cc_major = d.cc_major;
        g.cc_minor = d.cc_minor;
    }
    g.sm_count = d.sm_count;
    g.l2_bytes = d.l2_bytes;
    if (g.memory_bytes == 0) g.memory_bytes = d.memory_bytes;
}

std::string idle_evidence(const gpu_info& g) {
    if (g.idle_samples.empty()) return "no clock samples";
    unsigned lo = ~0u, hi = 0, util_max = 0;
    int idle_bit = 0, with_reasons = 0, with_util = 0;
    for (const auto& s : g.idle_samples) {
        lo = std::min(lo, s.sm_clock_mhz);
        hi = std::max(hi, s.sm_clock_mhz);
        if (s.event_reasons) {
            ++with_reasons;
            if (*s.event_reasons & 0x1) ++idle_bit;
        }
        if (s.utilization_pct) {
            ++with_util;
            util_max = std::max(util_max, *s.utilization_pct);
        }
    }
    std::string s = fmt::format("SM clock {}–{} MHz (max {}) over {} samples in {:.1f} s", lo, hi, g.max_sm_clock_mhz,
                                g.idle_samples.size(), g.idle_samples.back().t_s);
    if (with_reasons) s += fmt::format("; reason gpu_idle in {} of {}", idle_bit, with_reasons);
    if (with_util) s += fmt::format("; utilisation at most {} %", util_max);
    if (g.compute_processes) s += fmt::format("; {} other compute processes", *g.compute_processes);
    const bool idle = (with_util == 0 || util_max == 0) && g.compute_processes.value_or(0) == 0;
    return s + (idle ? ": idle" : ": BUSY — another workload is using this GPU");
}

}  // namespace

std::string find_tool(const std::string& name) {
    std::vector<fs::path> dirs;
    if (const char* path = std::getenv("PATH"))
        for (const auto& d : split(path, ':'))
            if (!d.empty()) dirs.emplace_back(d);
    for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
        if (const char* p = std::getenv(env); p != nullptr && *p != '\0') dirs.push_back(fs::path(p) / "bin");
    dirs.emplace_back("/usr/local/cuda/bin");
    if (name == "ncu") {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator("/opt/nvidia/nsight-compute", ec)) dirs.push_back(e.path());
    }
    for (const auto& d : dirs) {
        const auto p = d / name;
        if (::access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p)) return p.string();
    }
    return "";
}

const char* preflight_smi_fields() {
    return "index,name,uuid,driver_version,compute_cap,memory.total,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,"
           "clocks_event_reasons.active,temperature.gpu,power.draw,power.limit,utilization.gpu";
}

std::vector<gpu_info> parse_nvidia_smi_csv(std::string_view csv) {
    std::vector<gpu_info> out;
    std::istringstream in{std::string(csv)};
    std::string line;
    while (std::getline(in, line)) {
        if (trim(line).empty()) continue;
        const auto f = split(line, ',');
        if (f.size() < 15) continue;
        gpu_info g;
        g.source = "nvidia-smi";
        parse_number(f[0], g.index);
        g.name = f[1];
        g.uuid = f[2];
        if (const auto dot = f[4].find('.'); dot != std::string::npos) {
            parse_number(f[4].substr(0, dot), g.cc_major);
            parse_number(f[4].substr(dot + 1), g.cc_minor);
        }
        std::uint64_t mib = 0;
        if (parse_number(f[5], mib)) g.memory_bytes = mib << 20;
        parse_number(f[6], g.sm_clock_mhz);
        parse_number(f[7], g.max_sm_clock_mhz);
        parse_number(f[8], g.mem_clock_mhz);
        parse_number(f[9], g.max_mem_clock_mhz);
        std::uint64_t reasons = 0;
        if (parse_number(f[10], reasons)) g.event_reasons = reasons;
        unsigned v = 0;
        if (parse_number(f[11], v)) g.temperature_c = v;
        double w = 0;
        if (parse_number(f[12], w)) g.power_w = w;
        if (parse_number(f[13], w)) g.power_limit_w = w;
        if (parse_number(f[14], v)) g.utilization_pct = v;
        out.push_back(std::move(g));
    }
    return out;
}

std::string parse_tool_version(std::string_view output) {
    const std::string text(output);
    for (const char* key : {", V", "Version ", "version "}) {
        const auto p = text.find(key);
        if (p == std::string::npos) continue;
        const auto start = p + std::string_view(key).size();
        auto end = start;
        while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) ++end;
        if (end > start) return text.substr(start, end - start);
    }
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line))
        if (!trim(line).empty()) return trim(line);
    return "";
}

std::string describe_event_reasons(std::uint64_t mask) {
    if (mask == 0) return "none";
    static const std::pair<std::uint64_t, const char*> names[] = {
        {0x1, "gpu_idle"},           {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"},
        {0x8, "hw_slowdown"},        {0x10, "sync_boost"},                 {0x20, "sw_thermal_slowdown"},
        {0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake_slowdown"},  {0x100, "display_clock_setting"}};
    std::string s;
    std::uint64_t rest = mask;
    for (const auto& [bit, name] : names)
        if (mask & bit) {
            s += (s.empty() ? "" : "|") + std::string(name);
            rest &= ~bit;
        }
    if (rest != 0) s += (s.empty() ? "" : "|") + fmt::format("0x{:x}", rest);
    return s;
}

preflight_report run_preflight(command_runner_base& commands, const preflight_options& o) {
    preflight_report r;
    r.created_utc = utc_now();
    r.kloop_version = build_info::version;
    r.kloop_commit = build_info::git_commit;
    r.kloop_dirty = build_info::git_dirty;
    r.host_cpu = cpu_model();
    r.logical_cpus = logical_cpus();
    r.cuda_support_built_in = o.cuda_support_built_in;
    const auto confinement = probe_confinement();
    r.seccomp_available = confinement.seccomp;
    r.landlock_abi = confinement.landlock_abi;
    if (!confinement.seccomp || confinement.landlock_abi == 0)
        r.warnings.push_back("candidates cannot be fully confined here (" + confinement.detail +
                             "): every result is marked unconfined and the loop promotes it only with "
                             "--allow-unconfined (docs/security.md)");

    // Tools.
    r.tools.push_back(probe_tool(commands, "nvcc", {"--version"}, o.tool_timeout_s));
    r.tools.push_back(probe_tool(commands, "ncu", {"--version"}, o.tool_timeout_s));
    r.tools.push_back(probe_tool(commands, "compute-sanitizer", {"--version"}, o.tool_timeout_s));
    r.tools.push_back(probe_tool(commands, "nvidia-smi", {"--version"}, o.tool_timeout_s));
    r.tools.push_back(probe_tool(commands, "python3", {"--version"}, o.tool_timeout_s));
    const auto& python = r.tools.back();
    if (o.query_python && python.found) {
        auto py = [&](const std::string& code) {
            process_request q;
            q.argv = {python.path, "-c", code};
            q.timeout_s = o.tool_timeout_s;
            const auto res = commands.run(q);
            return res.succeeded() ? trim(res.stdout_text) : std::string();
        };
        const auto torch = py("import torch; print(torch.__version__); print(torch.version.cuda or '')");
        if (!torch.empty()) {
            const auto lines = split(torch, '\n');
            r.torch_version = lines[0];
            if (lines.size() > 1) r.torch_cuda = lines[1];
        }
        r.triton_version = py("import triton; print(triton.__version__)");
    }
    for (const char* p : {"/usr/local/cuda/lib64/libcupti.so.13", "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"})
        if (fs::exists(p)) {
            r.cupti_library = p;
            break;
        }
    if (const char* p = std::getenv("KLOOP_CUPTI_LIB"); p != nullptr && fs::exists(p)) r.cupti_library = p;

    // GPUs: NVML, then the driver API for SMs and L2, then nvidia-smi if NVML was unusable.
    std::string nvml_error = "not queried", driver_error = "not queried";
    std::vector<driver_device> drv;
    if (o.query_driver) {
        driver_error.clear();
        drv = driver_devices(driver_error, r.cuda_driver_api);
    }
    if (o.query_nvml) {
        nvml_session nvml;
        nvml_error = nvml.error;
        if (nvml.ok) {
            char buf[96] = {};
            if (nvml.api.driver && nvml.api.driver(buf, sizeof buf) == k_nvml_success) r.driver_version = buf;
            int v = 0;
            if (r.cuda_driver_api.empty() && nvml.api.cuda_driver && nvml.api.cuda_driver(&v) == k_nvml_success)
                r.cuda_driver_api = fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
            unsigned n = 0;
            nvml.api.count(&n);
            for (unsigned i = 0; i < n; ++i) r.gpus.push_back(nvml_device(nvml.api, i));
            // Idle-clock evidence: a few samples of clock, reasons and utilisation.
            const auto t0 = std::chrono::steady_clock::now();
            for (int k = 0; k < o.idle_samples; ++k) {
                if (k > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o.idle_interval_s));
                const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                for (unsigned i = 0; i < n; ++i) {
                    void* d = nullptr;
                    if (nvml.api.handle(i, &d) != k_nvml_success) continue;
                    clock_sample s;
                    s.t_s = t;
                    nvml_sample(nvml.api, d, s);
                    r.gpus[i].idle_samples.push_back(s);
                }
            }
        }
    }
    if (r.gpus.empty() && o.query_nvidia_smi) {
        const auto smi = find_tool("nvidia-smi");
        if (!smi.empty()) {
            process_request q;
            q.argv = {smi, std::string("--query-gpu=") + preflight_smi_fields(), "--format=csv,noheader,nounits"};
            q.timeout_s = o.tool_timeout_s;
            const auto res = commands.run(q);
            if (res.succeeded()) {
                r.gpus = parse_nvidia_smi_csv(res.stdout_text);
                const auto smi_driver = split(res.stdout_text, ',');
                if (r.driver_version.empty() && smi_driver.size() > 3) r.driver_version = smi_driver[3];
            }
        }
    }
    // Attach the driver API's facts by UUID, else by position; a GPU only the driver sees.
    for (std::size_t i = 0; i < drv.size(); ++i) {
        auto it = std::find_if(r.gpus.begin(), r.gpus.end(), [&](const gpu_info& g) { return !g.uuid.empty() && g.uuid == drv[i].uuid; });
        if (it == r.gpus.end() && i < r.gpus.size() && r.gpus[i].uuid.empty()) it = r.gpus.begin() + static_cast<long>(i);
        if (it != r.gpus.end()) {
            merge_driver(*it, drv[i]);
            it->source += "+driver";
        } else {
            gpu_info g;
            g.index = static_cast<int>(i);
            g.source = "driver";
            merge_driver(g, drv[i]);
            r.gpus.push_back(g);
        }
    }
    r.gpu_present = !r.gpus.empty();
    if (!r.gpu_present)
        r.gpu_absent_reason = "no GPU found (NVML: " + nvml_error + "; CUDA driver: " + driver_error + ")";

    for (auto& g : r.gpus) {
        if (g.event_reasons) g.event_reasons_text = describe_event_reasons(*g.event_reasons);
        if (!g.idle_samples.empty() || g.utilization_pct) {
            if (g.idle_samples.empty()) g.idle_samples.push_back({0, g.sm_clock_mhz, g.event_reasons, g.utilization_pct});
            g.idle_evidence = idle_evidence(g);
        }
        if (g.compute_processes.value_or(0) > 0)
            r.warnings.push_back(fmt::format("GPU {}: {} other compute processes are running: timings will be noisy",
                                             g.index, *g.compute_processes));
        const std::uint64_t bad = 0x8 | 0x20 | 0x40 | 0x80;  // hw slowdown, thermal, power brake
        if (g.event_reasons && (*g.event_reasons & bad) != 0)
            r.warnings.push_back(fmt::format("GPU {}: clocks held down by {}", g.index, g.event_reasons_text));
    }

    // Profiling.
    const auto& ncu = r.tools[1];
    if (!ncu.found) {
        r.profiling_reason = "profiling unavailable: ncu not found (install Nsight Compute or put ncu on PATH)";
    } else if (!r.gpu_present) {
        r.profiling_reason = "profiling unavailable: no GPU";
    } else {
        bool admin_only = false;
        std::ifstream params("/proc/driver/nvidia/params");
        std::string line;
        while (std::getline(params, line))
            if (line.rfind("RmProfilingAdminOnly:", 0) == 0) admin_only = trim(line.substr(21)) == "1";
        if (admin_only && ::geteuid() != 0) {
            r.profiling_reason = "profiling unavailable: GPU performance counters are restricted to admins "
                                 "(RmProfilingAdminOnly: 1); run as root or set NVreg_RestrictProfilingToAdminUsers=0";
        } else {
            r.profiling_available = true;
            r.profiling_reason = "ncu " + ncu.version + " at " + ncu.path;
        }
    }
    if (!r.cuda_support_built_in)
        r.warnings.push_back("this kloop was built without CUDA support (KLOOP_ENABLE_CUDA=OFF): CUDA candidates cannot run");
    if (r.gpu_present && r.cupti_library.empty())
        r.warnings.push_back("libcupti.so.13 not found: the kernel census will be unavailable (set KLOOP_CUPTI_LIB)");
    return r;
}

json to_json(const preflight_report& r) {
    json gpus = json::array();
    for (const auto& g : r.gpus) {
        json samples = json::array();
        for (const auto& s : g.idle_samples) {
            json j = {{"t_s", s.t_s}, {"sm_clock_mhz", s.sm_clock_mhz}};
            if (s.event_reasons) j["event_reasons"] = *s.event_reasons;
            if (s.utilization_pct) j["utilization_pct"] = *s.utilization_pct;
            samples.push_back(j);
        }
        json j = {{"index", g.index},
                  {"source", g.source},
                  {"name", g.name},
                  {"uuid", g.uuid},
                  {"compute_capability", g.cc_major >= 0 ? json(fmt::format("{}.{}", g.cc_major, g.cc_minor)) : json()},
                  {"sm_count", g.sm_count >= 0 ? json(g.sm_count) : json()},
                  {"l2_bytes", g.l2_bytes ? json(g.l2_bytes) : json()},
                  {"memory_bytes", g.memory_bytes ? json(g.memory_bytes) : json()},
                  {"clocks_mhz", {{"sm", g.sm_clock_mhz}, {"sm_max", g.max_sm_clock_mhz}, {"mem", g.mem_clock_mhz},
                                  {"mem_max", g.max_mem_clock_mhz}}},
                  {"event_reasons", g.event_reasons ? json(*g.event_reasons) : json()},
                  {"event_reasons_text", g.event_reasons_text},
                  {"temperature_c", g.temperature_c ? json(*g.temperature_c) : json()},
                  {"power_w", g.power_w ? json(*g.power_w) : json()},
                  {"power_limit_w", g.power_limit_w ? json(*g.power_limit_w) : json()},
                  {"utilization_pct", g.utilization_pct ? json(*g.utilization_pct) : json()},
                  {"compute_processes", g.compute_processes ? json(*g.compute_processes) : json()},
                  {"idle_samples", samples},
                  {"idle_evidence", g.idle_evidence}};
        gpus.push_back(j);
    }
    json tools = json::object();
    for (const auto& t : r.tools)
        tools[t.name] = {{"found", t.found}, {"path", t.found ? json(t.path) : json()}, {"version", t.version},
                         {"error", t.error}};
    json j = {{"schema_version", r.schema_version},
              {"kind", "kloop.preflight"},
              {"created_utc", r.created_utc},
              {"command_line", r.command_line},
              {"kloop", {{"version", r.kloop_version}, {"commit", r.kloop_commit}, {"dirty", r.kloop_dirty}}},
              {"host", {{"cpu", r.host_cpu}, {"logical_cpus", r.logical_cpus}}},
              {"cuda_support_built_in", r.cuda_support_built_in},
              {"driver_version", r.driver_version},
              {"cuda_driver_api", r.cuda_driver_api},
              {"gpu", {{"present", r.gpu_present}, {"reason", r.gpu_absent_reason}, {"count", r.gpus.size()}}},
              {"gpus", gpus},
              {"tools", tools},
              {"python", {{"torch", r.torch_version}, {"torch_cuda", r.torch_cuda}, {"triton", r.triton_version}}},
              {"cupti_library", r.cupti_library},
              {"profiling", {{"available", r.profiling_available}, {"reason", r.profiling_reason}}},
              {"confinement", {{"seccomp", r.seccomp_available}, {"landlock_abi", r.landlock_abi}}},
              {"warnings", r.warnings}};
    return j;
}

std::string to_markdown(const preflight_report& r) {
    std::string s = "# kloop preflight\n\n";
    s += fmt::format("- created: {} · kloop {} ({}{})\n", r.created_utc, r.kloop_version, r.kloop_commit.substr(0, 12),
                     r.kloop_dirty ? ", dirty" : "");
    s += fmt::format("- host: {} ({} logical CPUs)\n", r.host_cpu, r.logical_cpus);
    s += fmt::format("- CUDA support built in: {}\n", r.cuda_support_built_in ? "yes" : "no");
    if (!r.driver_version.empty() || !r.cuda_driver_api.empty())
        s += fmt::format("- driver: {} · CUDA driver API {}\n", r.driver_version.empty() ? "?" : r.driver_version,
                         r.cuda_driver_api.empty() ? "?" : r.cuda_driver_api);
    s += "\n## GPU\n\n";
    if (!r.gpu_present) s += r.gpu_absent_reason + "\n\n";
    for (const auto& g : r.gpus) {
        s += fmt::format("### GPU {}: {} ({})\n\n", g.index, g.name, g.uuid);
        s += "| fact | value |\n| --- | --- |\n";
        s += fmt::format("| compute capability | {} |\n", g.cc_major >= 0 ? fmt::format("{}.{}", g.cc_major, g.cc_minor) : "?");
        s += fmt::format("| SMs | {} |\n", g.sm_count >= 0 ? std::to_string(g.sm_count) : "?");
        s += fmt::format("| L2 | {} |\n", g.l2_bytes ? fmt::format("{} B ({:.0f} MiB)", g.l2_bytes, g.l2_bytes / 1048576.0) : "?");
        s += fmt::format("| memory | {} |\n", g.memory_bytes ? fmt::format("{:.1f} GiB", g.memory_bytes / 1073741824.0) : "?");
        s += fmt::format("| SM clock | {} MHz (max {}) |\n", g.sm_clock_mhz, g.max_sm_clock_mhz);
        s += fmt::format("| memory clock | {} MHz (max {}) |\n", g.mem_clock_mhz, g.max_mem_clock_mhz);
        s += fmt::format("| clock event reasons | {} |\n", g.event_reasons_text.empty() ? "?" : g.event_reasons_text);
        if (g.temperature_c) s += fmt::format("| temperature | {} °C |\n", *g.temperature_c);
        if (g.power_w) s += fmt::format("| power | {:.1f} W (limit {}) |\n", *g.power_w,
                                        g.power_limit_w ? fmt::format("{:.0f} W", *g.power_limit_w) : "?");
        if (g.compute_processes) s += fmt::format("| other compute processes | {} |\n", *g.compute_processes);
        if (!g.idle_evidence.empty()) s += fmt::format("| idle evidence | {} |\n", g.idle_evidence);
        s += fmt::format("| source | {} |\n\n", g.source);
    }
    s += "## Tools\n\n| tool | path | version |\n| --- | --- | --- |\n";
    for (const auto& t : r.tools)
        s += fmt::format("| {} | {} | {} |\n", t.name, t.found ? t.path : "not found", t.found ? t.version : t.error);
    s += fmt::format("| torch | | {} |\n", r.torch_version.empty() ? "not importable"
                                                                 : r.torch_version + (r.torch_cuda.empty() ? "" : " (CUDA " + r.torch_cuda + ")"));
    s += fmt::format("| triton | | {} |\n", r.triton_version.empty() ? "not importable" : r.triton_version);
    s += fmt::format("| CUPTI (kernel census) | {} | |\n", r.cupti_library.empty() ? "not found" : r.cupti_library);
    s += "\n## Profiling\n\n" + std::string(r.profiling_available ? "available: " : "") + r.profiling_reason + "\n";
    s += fmt::format("\n## Confinement of candidates\n\nseccomp: {} · Landlock ABI: {}\n",
                     r.seccomp_available ? "yes" : "no", r.landlock_abi > 0 ? std::to_string(r.landlock_abi) : "none");
    if (!r.warnings.empty()) {
        s += "\n## Warnings\n\n";
        for (const auto& w : r.warnings) s += "- " + w + "\n";
    }
    return s;
}

}  // namespace kloop::platform
