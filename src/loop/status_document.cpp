// kloop loop: where a loop stands, as one JSON document (see status_document.hpp).
#include "loop/status_document.hpp"

#include "loop/record/proposer_calibration.hpp"

namespace kloop::loop {

using nlohmann::json;

json strategies_json(const std::vector<fingerprint_summary>& fps) {
    json blocked = json::array(), preferred = json::array();
    for (const auto& f : fps) {
        json row = {{"fingerprint", f.fingerprint}, {"tags", f.tags}, {"positive", f.positive}, {"negative", f.negative},
                    {"rejected", f.rejected}, {"runs", f.runs}};
        if (f.is_blocked()) blocked.push_back(row);
        else if (f.is_preferred()) preferred.push_back(row);
    }
    return {{"blocked", blocked}, {"preferred", preferred}};
}

json status_json(const loop_session& s, const loop_status& st, const std::vector<fingerprint_summary>& fps) {
    auto bench_json = [](const iteration_record& r) {
        json a = json::array();
        for (const auto& b : r.bench)
            a.push_back({{"mode", b.mode}, {"shape", b.shape}, {"median_ms", b.s.median * 1e3}, {"mean_ms", b.s.mean * 1e3}});
        return a;
    };
    json best = nullptr;
    if (st.best) {
        const auto& r = s.records[static_cast<std::size_t>(*st.best)];
        best = {{"version", *st.best}, {"label", version_label(*st.best)},
                {"geomean_median_ms", st.best_geomean_median_s.value_or(0) * 1e3}, {"bench", bench_json(r)},
                {"profile", r.profile_status}};
    }
    json its = json::array();
    for (const auto& r : s.records)
        its.push_back({{"number", r.number}, {"status", to_string(r.status)}, {"rejection", to_string(r.rejection)},
                       {"reason", r.reason}, {"fingerprint", r.fingerprint}});
    const auto strategies = strategies_json(fps);
    json last_predictions = json::array();
    for (const auto& p : s.records.back().predictions) last_predictions.push_back(to_json(p));
    json j = record_header("kloop.status", s.origin);
    j.update({{"op", s.c.op},
              {"workspace", s.ws.root().string()},
              {"iterations", st.iterations},
              {"max_iterations", st.max_iterations},
              {"best", best},
              {"baseline_geomean_median_ms", st.baseline_geomean_median_s ? json(*st.baseline_geomean_median_s * 1e3) : json(nullptr)},
              {"estimated_speedup", st.estimated_speedup ? json(*st.estimated_speedup) : json(nullptr)},
              {"since_improvement", st.since_improvement},
              {"counts", {{"positive", st.positive}, {"negative", st.negative}, {"rejected", st.rejected}}},
              {"blocked", strategies.at("blocked")},
              {"preferred", strategies.at("preferred")},
              {"records", its},
              {"last_predictions", last_predictions},
              {"proposer_calibration", to_json(calibrate(s.records))},
              {"next", {{"step", to_string(st.next)}, {"text", st.next_text}}},
              {"repairs", s.repairs}});
    return j;
}

}  // namespace kloop::loop
