// kloop loop/record: the proposer's calibration over a loop (see proposer_calibration.hpp).
#include "loop/record/proposer_calibration.hpp"

#include <algorithm>
#include <cmath>

#include "core/json_number.hpp"

namespace kloop::loop {

using nlohmann::json;

namespace {

struct tally_builder {
    calibration_tally t;
    std::vector<double> abs_logs;

    void add(const scored_prediction& p) {
        ++t.made;
        if (p.score.outcome == prediction_outcome::unscored) return;
        ++t.scored;
        if (p.score.outcome == prediction_outcome::hit) {
            ++t.hits;
            return;
        }
        if (!p.score.off_by || !(*p.score.off_by > 0)) return;
        if (*p.score.off_by < 1) ++t.optimistic;
        else if (*p.score.off_by > 1) ++t.pessimistic;
        abs_logs.push_back(std::fabs(std::log(*p.score.off_by)));
    }

    calibration_tally finish() {
        if (!abs_logs.empty()) {
            std::sort(abs_logs.begin(), abs_logs.end());
            const std::size_t n = abs_logs.size();
            t.median_abs_log_off_by = n % 2 == 1 ? abs_logs[n / 2] : (abs_logs[n / 2 - 1] + abs_logs[n / 2]) / 2;
        }
        return t;
    }
};

json tally_json(const calibration_tally& t) {
    const auto rate = t.hit_rate();
    return {{"made", t.made},
            {"scored", t.scored},
            {"hits", t.hits},
            {"hit_rate", rate ? json_number(*rate) : json(nullptr)},
            {"median_abs_log_off_by", t.median_abs_log_off_by ? json_number(*t.median_abs_log_off_by) : json(nullptr)},
            {"optimistic", t.optimistic},
            {"pessimistic", t.pessimistic}};
}

}  // namespace

std::optional<double> calibration_tally::hit_rate() const {
    if (scored == 0) return std::nullopt;
    return static_cast<double>(hits) / scored;
}

proposer_calibration calibrate(const std::vector<iteration_record>& records) {
    const prediction_kind kinds[] = {prediction_kind::speedup, prediction_kind::no_change, prediction_kind::profile};
    tally_builder all;
    std::vector<tally_builder> per_kind(std::size(kinds));
    for (const auto& r : records)
        for (const auto& p : r.predictions) {
            all.add(p);
            per_kind[static_cast<std::size_t>(p.claim.kind)].add(p);
        }
    proposer_calibration c;
    c.all = all.finish();
    for (std::size_t k = 0; k < std::size(kinds); ++k) c.by_kind.emplace_back(kinds[k], per_kind[k].finish());
    return c;
}

json to_json(const proposer_calibration& c) {
    json j = tally_json(c.all);
    json kinds = json::object();
    for (const auto& [kind, t] : c.by_kind) kinds[to_string(kind)] = tally_json(t);
    j["by_kind"] = kinds;
    return j;
}

}  // namespace kloop::loop
