// kloop backend/cuda: the GPU probe (see gpu_probe.hpp).
#include "backend/cuda/gpu_probe.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "backend/cuda/nvml_loader.hpp"

namespace kloop::backend::cuda {

namespace {

using platform::gpu_info;

// ---- CUDA driver API: SMs and L2 (NVML has neither); cuInit creates no context ----------------
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
        if (attr(&value, 16, dev) == 0) d.sm_count = value;                              // MULTIPROCESSOR_COUNT
        if (attr(&value, 38, dev) == 0) d.l2_bytes = static_cast<std::uint64_t>(value);  // L2_CACHE_SIZE
        attr(&d.cc_major, 75, dev);                                                      // COMPUTE_CAPABILITY_MAJOR
        attr(&d.cc_minor, 76, dev);                                                      // COMPUTE_CAPABILITY_MINOR
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

// ---- NVML -------------------------------------------------------------------------------------
gpu_info nvml_device(const nvml_loader& nvml, unsigned i) {
    gpu_info g;
    g.index = static_cast<int>(i);
    g.source = "nvml";
    g.name = nvml.get_device_name();
    g.uuid = nvml.get_device_uuid();
    if (const auto cc = nvml.get_compute_capability()) std::tie(g.cc_major, g.cc_minor) = *cc;
    g.memory_bytes = nvml.get_memory_total_bytes().value_or(0);
    if (const auto s = nvml.sample_clocks(/*with_max=*/true)) {
        g.sm_clock_mhz = s->sm_clock_mhz;
        g.max_sm_clock_mhz = s->max_sm_clock_mhz;
        if (s->reasons_known) g.event_reasons = s->event_reasons;
    }
    if (const auto m = nvml.get_memory_clocks_mhz()) std::tie(g.mem_clock_mhz, g.max_mem_clock_mhz) = *m;
    g.temperature_c = nvml.get_temperature_c();
    if (const auto p = nvml.get_power_mw()) g.power_w = *p / 1000.0;
    if (const auto p = nvml.get_power_limit_mw()) g.power_limit_w = *p / 1000.0;
    g.utilization_pct = nvml.get_utilization_pct();
    g.compute_processes = nvml.get_compute_process_count();
    return g;
}

}  // namespace

platform::gpu_probe_result probe_gpus(const gpu_probe_options& o) {
    platform::gpu_probe_result r;
    const auto drv = driver_devices(r.driver_error, r.cuda_driver_api);
    nvml_loader nvml;
    if (!nvml.is_available()) {
        r.nvml_error = nvml.get_error();
    } else {
        r.driver_version = nvml.get_driver_version();
        if (r.cuda_driver_api.empty()) r.cuda_driver_api = nvml.get_cuda_driver_version();
        const unsigned n = nvml.get_device_count();
        for (unsigned i = 0; i < n; ++i)
            if (nvml.select_device("", i)) r.gpus.push_back(nvml_device(nvml, i));
        // Idle-clock evidence: a few samples of clock, reasons and utilisation.
        const auto t0 = std::chrono::steady_clock::now();
        for (int k = 0; k < o.idle_samples; ++k) {
            if (k > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o.idle_interval_s));
            const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            for (auto& g : r.gpus) {
                if (!nvml.select_device("", static_cast<unsigned>(g.index))) continue;
                platform::clock_sample s;
                s.t_s = t;
                if (const auto c = nvml.sample_clocks()) {
                    s.sm_clock_mhz = c->sm_clock_mhz;
                    if (c->reasons_known) s.event_reasons = c->event_reasons;
                }
                s.utilization_pct = nvml.get_utilization_pct();
                g.idle_samples.push_back(s);
            }
        }
    }
    // Attach the driver API's facts by UUID, else by position; a GPU only the driver sees.
    for (std::size_t i = 0; i < drv.size(); ++i) {
        auto it = std::find_if(r.gpus.begin(), r.gpus.end(),
                               [&](const gpu_info& g) { return !g.uuid.empty() && g.uuid == drv[i].uuid; });
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
    return r;
}

int probe_gpus_main(int argc, char** argv) {
    gpu_probe_options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--probe-gpus") continue;
        const bool has_value = i + 1 < argc;
        try {
            if (a == "--idle-samples" && has_value) {
                o.idle_samples = std::stoi(argv[++i]);
                if (o.idle_samples < 0 || o.idle_samples > 1000) throw std::out_of_range("idle samples");
                continue;
            }
            if (a == "--idle-interval" && has_value) {
                o.idle_interval_s = std::stod(argv[++i]);
                if (!(o.idle_interval_s >= 0 && o.idle_interval_s <= 10)) throw std::out_of_range("idle interval");
                continue;
            }
        } catch (const std::exception&) {
            std::fprintf(stderr, "kloop-runner-cuda --probe-gpus: %s '%s': expected %s\n", a.c_str(), argv[i],
                         a == "--idle-samples" ? "an integer in [0, 1000]" : "seconds in [0, 10]");
            return 2;
        }
        std::fprintf(stderr, "kloop-runner-cuda --probe-gpus: unknown option '%s' (--idle-samples N, --idle-interval S)\n",
                     a.c_str());
        return 2;
    }
    std::cout << platform::to_json(probe_gpus(o)).dump() << "\n";
    return 0;
}

}  // namespace kloop::backend::cuda
