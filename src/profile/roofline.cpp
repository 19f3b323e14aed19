// kloop profile: the roofline (see roofline.hpp).
#include "profile/roofline.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/text.hpp"

namespace kloop::profile {

namespace {

struct datasheet_entry {
    std::string_view match;  // case-insensitive substring of the device name
    double dram_bytes_per_s;
    double fp32_flops_per_s;
    double tensor_flops_per_s;  // dense BF16
};

// Most specific first: "H200 NVL" before "H200", "H100 PCIe" before "H100", the 40 GB and PCIe
// A100s before "A100" (the 80 GB SXM4 part). Figures are NVIDIA's
// product pages (dense, no sparsity); docs/profiling.md "Datasheet peaks" repeats them.
constexpr std::array<datasheet_entry, 10> datasheet{{
    {"H200 NVL", 4.8e12, 60e12, 835e12},
    {"H200", 4.8e12, 67e12, 989e12},
    {"H100 NVL", 3.9e12, 60e12, 835e12},
    {"H100 PCIe", 2.0e12, 51e12, 756e12},
    {"H100 SXM", 3.35e12, 67e12, 989e12},
    {"H100", 3.35e12, 67e12, 989e12},
    {"A100-SXM4-40GB", 1.555e12, 19.5e12, 312e12},
    {"A100-PCIE-40GB", 1.555e12, 19.5e12, 312e12},
    {"A100 80GB PCIe", 1.935e12, 19.5e12, 312e12},
    {"A100", 2.039e12, 19.5e12, 312e12},
}};

double number_at(const nlohmann::json& j, const char* key) {
    if (!j.contains(key)) throw usage_error(fmt::format("device peaks: key '{}' is missing", key));
    const auto& v = j.at(key);
    if (!v.is_number()) throw usage_error(fmt::format("device peaks: key '{}' is not a number", key));
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < 0)
        throw usage_error(fmt::format("device peaks: key '{}' must be a finite number >= 0, got {}", key, d));
    return d;
}

void require_input(double v, const char* what) {
    if (!std::isfinite(v) || v < 0)
        throw usage_error(fmt::format("roofline: {} must be a finite number >= 0, got {}", what, v));
}

}  // namespace

std::string to_string(peak_source s) { return s == peak_source::calibrated ? "calibrated" : "datasheet"; }

peak_source peak_source_from_string(std::string_view s) {
    if (s == "calibrated") return peak_source::calibrated;
    if (s == "datasheet") return peak_source::datasheet;
    throw usage_error(fmt::format("device peaks: unknown source '{}' (calibrated or datasheet)", s));
}

std::string to_string(roofline_bound b) { return b == roofline_bound::memory ? "memory" : "compute"; }

roofline_bound roofline_bound_from_string(std::string_view s) {
    if (s == "memory") return roofline_bound::memory;
    if (s == "compute") return roofline_bound::compute;
    throw usage_error(fmt::format("unknown roofline bound '{}' (memory or compute)", s));
}

std::optional<device_peaks> datasheet_peaks(std::string_view device_name) {
    const std::string name = lower(device_name);
    for (const auto& e : datasheet)
        if (name.find(lower(e.match)) != std::string::npos)
            return device_peaks{std::string(device_name), e.dram_bytes_per_s, e.fp32_flops_per_s,
                                e.tensor_flops_per_s, peak_source::datasheet};
    return std::nullopt;
}

nlohmann::json to_json(const device_peaks& p) {
    return {{"device", p.device_name},
            {"dram_bytes_per_s", p.dram_bytes_per_s},
            {"fp32_flops_per_s", p.fp32_flops_per_s},
            {"tensor_flops_per_s", p.tensor_flops_per_s},
            {"source", to_string(p.source)}};
}

device_peaks device_peaks_from_json(const nlohmann::json& j) {
    if (!j.is_object()) throw usage_error("device peaks: expected a JSON object");
    device_peaks p;
    if (!j.contains("device") || !j.at("device").is_string())
        throw usage_error("device peaks: key 'device' is missing or not a string");
    p.device_name = j.at("device").get<std::string>();
    p.dram_bytes_per_s = number_at(j, "dram_bytes_per_s");
    p.fp32_flops_per_s = number_at(j, "fp32_flops_per_s");
    p.tensor_flops_per_s = number_at(j, "tensor_flops_per_s");
    if (!j.contains("source") || !j.at("source").is_string())
        throw usage_error("device peaks: key 'source' is missing or not a string");
    p.source = peak_source_from_string(j.at("source").get<std::string>());
    return p;
}

roofline_point roofline_floor(double flops, double bytes, const device_peaks& peaks, bool uses_tensor_cores) {
    require_input(flops, "flops");
    require_input(bytes, "bytes");
    const double rate = uses_tensor_cores ? peaks.tensor_flops_per_s : peaks.fp32_flops_per_s;
    const char* rate_name = uses_tensor_cores ? "tensor_flops_per_s" : "fp32_flops_per_s";
    auto positive = [&](double v, const char* what) {
        if (!std::isfinite(v) || v <= 0)
            throw usage_error(fmt::format("roofline: device peaks for '{}' ({}): {} must be > 0, got {}",
                                          peaks.device_name, to_string(peaks.source), what, v));
    };
    positive(peaks.dram_bytes_per_s, "dram_bytes_per_s");
    positive(rate, rate_name);

    roofline_point p;
    p.flops = flops;
    p.bytes = bytes;
    p.uses_tensor_cores = uses_tensor_cores;
    p.bandwidth_bytes_per_s = peaks.dram_bytes_per_s;
    p.rate_flops_per_s = rate;
    p.memory_time_ns = bytes / peaks.dram_bytes_per_s * 1e9;
    p.compute_time_ns = flops / rate * 1e9;
    p.bound = p.memory_time_ns >= p.compute_time_ns ? roofline_bound::memory : roofline_bound::compute;
    p.floor_ns = std::max(p.memory_time_ns, p.compute_time_ns);
    p.arithmetic_intensity = bytes > 0 ? flops / bytes : std::numeric_limits<double>::infinity();
    p.ridge_point = rate / peaks.dram_bytes_per_s;
    return p;
}

double pct_of_floor(const roofline_point& point, double measured_ns) {
    if (!std::isfinite(measured_ns) || measured_ns <= 0)
        throw usage_error(fmt::format("roofline: measured time must be > 0 ns, got {}", measured_ns));
    return point.floor_ns / measured_ns * 100.0;
}

double reread_factor(double measured_dram_bytes, double spec_bytes) {
    if (!std::isfinite(spec_bytes) || spec_bytes <= 0)
        throw usage_error(fmt::format("roofline: spec bytes must be > 0 for a re-read factor, got {}", spec_bytes));
    require_input(measured_dram_bytes, "measured DRAM bytes");
    return measured_dram_bytes / spec_bytes;
}

bool suspect_below_floor(const roofline_point& point, double measured_ns, double margin) {
    if (!(margin >= 0 && margin < 1))
        throw usage_error(fmt::format("roofline: suspect margin must be in [0, 1), got {}", margin));
    if (!std::isfinite(measured_ns) || measured_ns <= 0)
        throw usage_error(fmt::format("roofline: measured time must be > 0 ns, got {}", measured_ns));
    return measured_ns < point.floor_ns * (1.0 - margin);
}

}  // namespace kloop::profile
