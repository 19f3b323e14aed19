// kloop platform: the current time as every record writes it.
//
// Responsibility: one spelling of "now" for the records kloop writes (workspace files, build cache
// entries, preflight): ISO 8601 in UTC to the second, "2026-12-03T07:24:42Z".
#pragma once

#include <string>

namespace kloop::platform {

[[nodiscard]] std::string utc_now_iso8601();

}  // namespace kloop::platform
