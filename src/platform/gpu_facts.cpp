// kloop platform: GPU facts and the probe's wire format (see gpu_facts.hpp).
#include "platform/gpu_facts.hpp"

#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace kloop::platform {

using nlohmann::json;

std::string describe_clock_event_reasons(std::uint64_t mask) {
    if (mask == 0) return "none";
    namespace r = clock_event_reason;
    static const std::pair<std::uint64_t, const char*> names[] = {
        {r::gpu_idle, "gpu_idle"},
        {r::applications_clocks_setting, "applications_clocks_setting"},
        {r::sw_power_cap, "sw_power_cap"},
        {r::hw_slowdown, "hw_slowdown"},
        {r::sync_boost, "sync_boost"},
        {r::sw_thermal_slowdown, "sw_thermal_slowdown"},
        {r::hw_thermal_slowdown, "hw_thermal_slowdown"},
        {r::hw_power_brake_slowdown, "hw_power_brake_slowdown"},
        {r::display_clock_setting, "display_clock_setting"}};
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

namespace {

template <typename T>
json optional_json(const std::optional<T>& v) {
    return v ? json(*v) : json();
}

template <typename T>
void read_optional(const json& j, const char* key, std::optional<T>& out) {
    if (j.contains(key) && !j.at(key).is_null()) out = j.at(key).get<T>();
}

}  // namespace

json to_json(const gpu_info& g) {
    json samples = json::array();
    for (const auto& s : g.idle_samples) {
        json j = {{"t_s", s.t_s}, {"sm_clock_mhz", s.sm_clock_mhz}};
        if (s.event_reasons) j["event_reasons"] = *s.event_reasons;
        if (s.utilization_pct) j["utilization_pct"] = *s.utilization_pct;
        samples.push_back(j);
    }
    return {{"index", g.index},
            {"source", g.source},
            {"name", g.name},
            {"uuid", g.uuid},
            {"compute_capability", g.cc_major >= 0 ? json(fmt::format("{}.{}", g.cc_major, g.cc_minor)) : json()},
            {"sm_count", g.sm_count >= 0 ? json(g.sm_count) : json()},
            {"l2_bytes", g.l2_bytes ? json(g.l2_bytes) : json()},
            {"memory_bytes", g.memory_bytes ? json(g.memory_bytes) : json()},
            {"clocks_mhz",
             {{"sm", g.sm_clock_mhz}, {"sm_max", g.max_sm_clock_mhz}, {"mem", g.mem_clock_mhz}, {"mem_max", g.max_mem_clock_mhz}}},
            {"event_reasons", optional_json(g.event_reasons)},
            {"event_reasons_text", g.event_reasons_text},
            {"temperature_c", optional_json(g.temperature_c)},
            {"power_w", optional_json(g.power_w)},
            {"power_limit_w", optional_json(g.power_limit_w)},
            {"utilization_pct", optional_json(g.utilization_pct)},
            {"compute_processes", optional_json(g.compute_processes)},
            {"idle_samples", samples},
            {"idle_evidence", g.idle_evidence}};
}

gpu_info gpu_info_from_json(const json& j) {
    if (!j.is_object()) throw std::invalid_argument("a GPU is not a JSON object");
    gpu_info g;
    try {
        g.index = j.value("index", 0);
        g.source = j.value("source", "");
        g.name = j.value("name", "");
        g.uuid = j.value("uuid", "");
        if (const auto cc = j.value("compute_capability", json()); cc.is_string()) {
            const auto s = cc.get<std::string>();
            const auto dot = s.find('.');
            if (dot == std::string::npos) throw std::invalid_argument("compute_capability '" + s + "' is not MAJOR.MINOR");
            g.cc_major = std::stoi(s.substr(0, dot));
            g.cc_minor = std::stoi(s.substr(dot + 1));
        }
        if (const auto v = j.value("sm_count", json()); !v.is_null()) g.sm_count = v.get<int>();
        if (const auto v = j.value("l2_bytes", json()); !v.is_null()) g.l2_bytes = v.get<std::uint64_t>();
        if (const auto v = j.value("memory_bytes", json()); !v.is_null()) g.memory_bytes = v.get<std::uint64_t>();
        if (const auto c = j.value("clocks_mhz", json::object()); c.is_object()) {
            g.sm_clock_mhz = c.value("sm", 0u);
            g.max_sm_clock_mhz = c.value("sm_max", 0u);
            g.mem_clock_mhz = c.value("mem", 0u);
            g.max_mem_clock_mhz = c.value("mem_max", 0u);
        }
        read_optional(j, "event_reasons", g.event_reasons);
        g.event_reasons_text = j.value("event_reasons_text", "");
        read_optional(j, "temperature_c", g.temperature_c);
        read_optional(j, "power_w", g.power_w);
        read_optional(j, "power_limit_w", g.power_limit_w);
        read_optional(j, "utilization_pct", g.utilization_pct);
        read_optional(j, "compute_processes", g.compute_processes);
        for (const auto& s : j.value("idle_samples", json::array())) {
            clock_sample c;
            c.t_s = s.value("t_s", 0.0);
            c.sm_clock_mhz = s.value("sm_clock_mhz", 0u);
            read_optional(s, "event_reasons", c.event_reasons);
            read_optional(s, "utilization_pct", c.utilization_pct);
            g.idle_samples.push_back(c);
        }
        g.idle_evidence = j.value("idle_evidence", "");
    } catch (const json::exception& e) {
        throw std::invalid_argument(std::string("a GPU's facts are malformed: ") + e.what());
    } catch (const std::out_of_range&) {
        throw std::invalid_argument("a GPU's compute_capability is out of range");
    }
    return g;
}

json to_json(const gpu_probe_result& r) {
    json gpus = json::array();
    for (const auto& g : r.gpus) gpus.push_back(to_json(g));
    return {{"kind", gpu_probe_kind},         {"schema_version", gpu_probe_schema_version},
            {"driver_version", r.driver_version}, {"cuda_driver_api", r.cuda_driver_api},
            {"gpus", gpus},                   {"nvml_error", r.nvml_error},
            {"driver_error", r.driver_error}};
}

gpu_probe_result gpu_probe_from_json(const std::string& text) {
    const auto j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) throw std::invalid_argument("the GPU probe's output is not a JSON object");
    try {
        if (j.value("kind", "") != gpu_probe_kind || j.value("schema_version", 0) != gpu_probe_schema_version)
            throw std::invalid_argument(fmt::format("the GPU probe's output is not {} schema {}", gpu_probe_kind,
                                                    gpu_probe_schema_version));
        gpu_probe_result r;
        r.driver_version = j.value("driver_version", "");
        r.cuda_driver_api = j.value("cuda_driver_api", "");
        r.nvml_error = j.value("nvml_error", "");
        r.driver_error = j.value("driver_error", "");
        const auto gpus = j.value("gpus", json());
        if (!gpus.is_array()) throw std::invalid_argument("the GPU probe's \"gpus\" is not an array");
        for (const auto& g : gpus) r.gpus.push_back(gpu_info_from_json(g));
        return r;
    } catch (const json::exception& e) {
        throw std::invalid_argument(std::string("the GPU probe's output is malformed: ") + e.what());
    }
}

}  // namespace kloop::platform
