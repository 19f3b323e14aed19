// kloop loop: the workspace's HTML page — `kloop show` and `kloop report --html`.
//
// Responsibility: gather from a workspace's records what report/html_report prints, without
// measuring anything: the iteration records (history, per-shape A/B intervals), the final claim
// of `kloop report` (final_result.json: verdict, criteria, and its A/B with the raw samples of v0
// and the best side by side), the raw samples of separate runs when no such claim exists
// (v0's from iter_v0's evaluation, the best's from its own iteration's A/B), each version's
// profile_summary.json (roofline points, dominant kernels' diagnoses), the device's datasheet
// peaks (profile/roofline) and this machine's calibrated peaks (eval/calibration), and the
// files of the workspace and of each iteration as links relative to the page.
// `kloop show` writes <workspace>/report.html (or --out); `kloop report --html` writes the same
// page after its re-measurement, handing in the claim it has just measured.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/html_report.hpp"

namespace kloop::loop {

struct loop_session;

// final_result.json read back: nullopt when `kloop report` has not written one. Throws
// kloop::usage_error naming the file when it is not a final result kloop can read.
[[nodiscard]] std::optional<report::html_final_claim> read_final_claim(const std::filesystem::path& final_result_file);
// The "ab" object of final_result.json (report/ab_json's kloop.compare record) as the A/B result
// the page prints: shapes with their statistics, intervals and raw samples; overall; settings;
// machine. Builds, gates and evaluations are not read back.
[[nodiscard]] eval::ab_evaluation ab_from_json(const nlohmann::json& j);

// What one version folder's profile_summary.json says for the page: one roofline point per mode
// and shape (the full capture where there is one, else the first parsed one) and the dominant
// kernel's diagnosis of that capture. Empty when the file is absent.
struct version_profile_data {
    std::vector<report::html_roofline_point> points;
    std::vector<report::html_diagnosis> diagnoses;
    std::optional<profile::device_peaks> peaks_used;  // the peaks the summary was computed with
};
[[nodiscard]] version_profile_data read_version_profile(const std::filesystem::path& profile_summary_json, int version);

// Everything the page shows. `page_file` is where it will be written (links are relative to its
// folder); `final_claim` replaces what final_result.json holds (`kloop report --html`).
[[nodiscard]] report::html_report_input gather_report_page(const loop_session& s, const std::filesystem::path& page_file,
                                                           std::optional<report::html_final_claim> final_claim,
                                                           const std::vector<std::string>& command_line);

struct show_request {
    std::filesystem::path workspace;
    std::optional<std::filesystem::path> out;  // default <workspace>/report.html
    std::vector<std::string> command_line;
};

// `kloop show`: opens the workspace for reading (the contract is checked as by every verb),
// gathers, writes the page atomically and returns its path.
[[nodiscard]] std::filesystem::path write_report_page(const show_request& req);

}  // namespace kloop::loop
