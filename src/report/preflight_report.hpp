// kloop report: preflight_check.json and preflight_check.md from a preflight report.
//
// Responsibility: the two printers of platform::preflight_report (the facts are gathered by
// platform/preflight): the JSON record (schema_version, kind "kloop.preflight") and the Markdown
// page a person reads before trusting a run on this machine.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "platform/preflight.hpp"

namespace kloop::report {

[[nodiscard]] nlohmann::json to_json(const platform::preflight_report& r);
[[nodiscard]] std::string to_markdown(const platform::preflight_report& r);

}  // namespace kloop::report
