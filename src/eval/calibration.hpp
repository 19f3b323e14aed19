// kloop eval: this machine's attainable peaks for the roofline (`kloop preflight --calibrate`).
//
// Responsibility: turn a `kloop verify` of the bundled calibration op (calibrate/ in kloop's data
// directory; share/calibrate in the checkout: a float4 copy, an FP32 FMA loop, an mma.sync bf16
// loop) into device peaks, cache them per GPU under $KLOOP_HOME/calibration/<device>.json, and
// choose the peaks a roofline uses:
//   - for reporting (% of floor): the calibrated peaks when cached for this device, else the
//     datasheet's (profile/roofline.hpp);
//   - for the suspect rule (a time below the floor): the larger of calibrated and datasheet,
//     per peak — mma.sync reaches well under Hopper's wgmma peak, and no honest kernel may be
//     flagged because the calibration kernel was slower than the hardware's limit.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "eval/record/evaluation.hpp"
#include "profile/roofline.hpp"

namespace kloop::eval {

// platform::data_dir()/calibrate (<prefix>/share/kloop/calibrate installed; the checkout's
// share/calibrate through the build tree's link).
[[nodiscard]] std::filesystem::path calibration_op_dir();

// Peaks from the bench of the calibration op: copy bytes / median, fma flops / median, mma
// flops / median, on the "peak" shape. Throws usage_error naming the mode that did not run.
[[nodiscard]] profile::device_peaks peaks_from_calibration(const evaluation& ev, const std::string& device_name);

// $KLOOP_HOME/calibration/<device name with [^A-Za-z0-9._-] as '_'>.json
[[nodiscard]] std::filesystem::path calibration_file(std::string_view device_name);
void save_calibration(const profile::device_peaks& peaks, const std::string& created_utc);
[[nodiscard]] std::optional<profile::device_peaks> load_calibration(std::string_view device_name);

struct roofline_peaks {
    std::optional<profile::device_peaks> report;   // calibrated, else datasheet; none: unknown device
    std::optional<profile::device_peaks> suspect;  // per-peak max of calibrated and datasheet
};
[[nodiscard]] roofline_peaks peaks_for_device(std::string_view device_name);
[[nodiscard]] roofline_peaks combine_peaks(const std::optional<profile::device_peaks>& calibrated,
                                           const std::optional<profile::device_peaks>& datasheet);

}  // namespace kloop::eval
