// kloop eval: calibrated device peaks (see calibration.hpp).
#include "eval/calibration.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"

namespace kloop::eval {

namespace fs = std::filesystem;

fs::path calibration_op_dir() { return platform::data_dir() / "calibrate"; }

profile::device_peaks peaks_from_calibration(const evaluation& ev, const std::string& device_name) {
    auto rate = [&](const char* mode, bool bytes) {
        for (const auto& s : ev.bench.shapes) {
            if (s.mode != mode || s.shape != "peak") continue;
            const auto amount = bytes ? s.bytes : s.flops;
            if (!s.ok || !s.stats_s || !amount || s.stats_s->median <= 0)
                throw usage_error(fmt::format("calibration: mode '{}' was not timed{}", mode,
                                              s.error.empty() ? std::string() : ": " + s.error));
            return *amount / s.stats_s->median;
        }
        throw usage_error(fmt::format("calibration: no bench result for mode '{}' on shape 'peak'", mode));
    };
    profile::device_peaks p;
    p.device_name = device_name;
    p.dram_bytes_per_s = rate("copy", true);
    p.fp32_flops_per_s = rate("fma", false);
    p.tensor_flops_per_s = rate("mma", false);
    p.source = profile::peak_source::calibrated;
    return p;
}

fs::path calibration_file(std::string_view device_name) {
    std::string name(device_name);
    for (auto& c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
    if (name.empty()) name = "unknown";
    return platform::kloop_home() / "calibration" / (name + ".json");
}

void save_calibration(const profile::device_peaks& peaks, const std::string& created_utc) {
    auto j = profile::to_json(peaks);
    j["created_utc"] = created_utc;
    const auto path = calibration_file(peaks.device_name);
    platform::ensure_directory(path.parent_path());
    platform::write_file_atomic(path, j.dump(2) + "\n");
}

std::optional<profile::device_peaks> load_calibration(std::string_view device_name) {
    const auto path = calibration_file(device_name);
    if (!fs::exists(path)) return std::nullopt;
    try {
        auto p = profile::device_peaks_from_json(nlohmann::json::parse(platform::read_file(path)));
        p.source = profile::peak_source::calibrated;
        return p;
    } catch (const std::exception& e) {
        throw usage_error(fmt::format("calibration cache '{}': {} (delete it, or run `kloop preflight --calibrate` again)",
                                      path.string(), e.what()));
    }
}

roofline_peaks combine_peaks(const std::optional<profile::device_peaks>& calibrated,
                             const std::optional<profile::device_peaks>& datasheet) {
    roofline_peaks r;
    r.report = calibrated ? calibrated : datasheet;
    if (calibrated && datasheet) {
        auto s = *datasheet;
        s.dram_bytes_per_s = std::max(calibrated->dram_bytes_per_s, datasheet->dram_bytes_per_s);
        s.fp32_flops_per_s = std::max(calibrated->fp32_flops_per_s, datasheet->fp32_flops_per_s);
        s.tensor_flops_per_s = std::max(calibrated->tensor_flops_per_s, datasheet->tensor_flops_per_s);
        r.suspect = s;
    } else {
        r.suspect = r.report;
    }
    return r;
}

roofline_peaks peaks_for_device(std::string_view device_name) {
    return combine_peaks(load_calibration(device_name), profile::datasheet_peaks(device_name));
}

}  // namespace kloop::eval
