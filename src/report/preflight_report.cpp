// kloop report: preflight JSON and Markdown (see preflight_report.hpp).
#include "report/preflight_report.hpp"

#include <fmt/format.h>

namespace kloop::report {

using nlohmann::json;

json to_json(const platform::preflight_report& r) {
    json gpus = json::array();
    for (const auto& g : r.gpus) gpus.push_back(platform::to_json(g));
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

std::string to_markdown(const platform::preflight_report& r) {
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

}  // namespace kloop::report
