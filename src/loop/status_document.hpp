// kloop loop: where a loop stands, as one JSON document (`kloop status --json`, the context a
// proposer of `kloop run` reads).
//
// Responsibility: gather loop_status, the best version's numbers, every iteration's verdict and
// the last iteration's scored predictions, the proposer's calibration over the loop, and the
// strategy memory's blocked and preferred fingerprints for this loop's key into the
// "kloop.status" record. Reads only; the caller has opened the session.
#pragma once

#include <nlohmann/json.hpp>

#include "loop/loop_session.hpp"
#include "loop/loop_status.hpp"
#include "loop/strategy_memory.hpp"

namespace kloop::loop {

// The blocked and preferred fingerprints of the key: {"blocked": [...], "preferred": [...]},
// each row {fingerprint, tags, positive, negative, rejected, runs}.
[[nodiscard]] nlohmann::json strategies_json(const std::vector<fingerprint_summary>& fps);

[[nodiscard]] nlohmann::json status_json(const loop_session& s, const loop_status& st,
                                         const std::vector<fingerprint_summary>& fps);

}  // namespace kloop::loop
