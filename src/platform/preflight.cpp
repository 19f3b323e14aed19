// kloop platform: preflight facts (see preflight.hpp).
#include "platform/preflight.hpp"

#include "platform/confinement.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kloop/version.hpp"
#include "platform/host_info.hpp"
#include "platform/subprocess.hpp"
#include "core/text.hpp"
#include "platform/utc_time.hpp"

namespace kloop::platform {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

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
    if (!res.succeeded() && kloop::trim(text).empty()) t.error = res.describe();
    t.version = parse_tool_version(text);
    return t;
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
        for (const auto& d : split_fields(path, ':'))
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
        if (kloop::trim(line).empty()) continue;
        const auto f = split_fields(line, ',');
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
        if (!kloop::trim(line).empty()) return std::string(kloop::trim(line));
    return "";
}

preflight_report run_preflight(command_runner_base& commands, const preflight_options& o) {
    preflight_report r;
    r.created_utc = utc_now_iso8601();
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
            return res.succeeded() ? std::string(kloop::trim(res.stdout_text)) : std::string();
        };
        const auto torch = py("import torch; print(torch.__version__); print(torch.version.cuda or '')");
        if (!torch.empty()) {
            const auto lines = split_fields(torch, '\n');
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

    // GPUs: the probe, a child that loads NVML and the driver (never this process); nvidia-smi
    // when it found none or there is no probe.
    std::string probe_error = "no GPU probe (this kloop has no CUDA runner)";
    if (!o.gpu_probe_argv.empty()) {
        process_request q;
        q.argv = o.gpu_probe_argv;
        q.argv.insert(q.argv.end(), {"--idle-samples", std::to_string(o.idle_samples), "--idle-interval",
                                     fmt::format("{}", o.idle_interval_s)});
        q.timeout_s = o.tool_timeout_s;
        const auto res = commands.run(q);
        if (!res.succeeded()) {
            probe_error = "the GPU probe " + res.describe();
        } else {
            try {
                auto probe = gpu_probe_from_json(res.stdout_text);
                r.driver_version = probe.driver_version;
                r.cuda_driver_api = probe.cuda_driver_api;
                r.gpus = std::move(probe.gpus);
                probe_error = "NVML: " + (probe.nvml_error.empty() ? std::string("no device") : probe.nvml_error) +
                              "; CUDA driver: " +
                              (probe.driver_error.empty() ? std::string("no device") : probe.driver_error);
            } catch (const std::invalid_argument& e) {
                probe_error = e.what();
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
                const auto smi_driver = split_fields(res.stdout_text, ',');
                if (r.driver_version.empty() && smi_driver.size() > 3) r.driver_version = smi_driver[3];
            }
        }
    }
    r.gpu_present = !r.gpus.empty();
    if (!r.gpu_present)
        r.gpu_absent_reason = "no GPU found (" + probe_error + ")";

    for (auto& g : r.gpus) {
        if (g.event_reasons) g.event_reasons_text = describe_clock_event_reasons(*g.event_reasons);
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
            if (line.rfind("RmProfilingAdminOnly:", 0) == 0) admin_only = kloop::trim(line.substr(21)) == "1";
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

}  // namespace kloop::platform
