// kloop report: the profile step's record and page (profile_summary.json, profile_summary.md).
//
// Responsibility: print what a profile step found (eval/record/profile_result.hpp) — the JSON
// record ("kloop.profile_step", schema_version 1: docs/profiling.md) and the Markdown page, with
// each capture's summary against the roofline (profile/profile_summary) — and write both into
// the step's output folder. `kloop profile` and the loop's profile step call it after
// eval::run_profile_step, which only captures, parses and judges.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/record/profile_result.hpp"
#include "profile/profile_summary.hpp"

namespace kloop::report {

[[nodiscard]] nlohmann::json to_json(const eval::profile_step_result& r);
[[nodiscard]] std::string to_markdown(const eval::profile_step_result& r);
// One capture's summary: its kernels, the roofline, each kernel's diagnosis and directions.
[[nodiscard]] std::string to_markdown(const profile::profile_summary& s);

// profile_summary.json and profile_summary.md in `out_dir` (written atomically).
void write_profile_summary(const std::filesystem::path& out_dir, const eval::profile_step_result& r);

}  // namespace kloop::report
