// kloop report: A/B comparison → JSON.
#include "report/ab_json.hpp"

#include <cmath>

#include "report/evaluation_json.hpp"

#include "core/json_number.hpp"

namespace kloop::report {

using nlohmann::json;

namespace {


json ms_array(const std::vector<double>& xs) {
    json a = json::array();
    for (double x : xs) a.push_back(x * 1e3);
    return a;
}

json side_json(const std::string& label, const eval::evaluation& e) {
    const bool gate_ran = e.status != eval::disposition::build_failed;
    return {{"label", label},
            {"status", eval::to_string(e.status)},
            {"reason", e.reason},
            {"gate", !gate_ran ? "not_run" : e.gate.pass ? "pass" : "fail"},
            {"git", {{"available", e.env.git_available}, {"commit", e.env.git_commit}, {"dirty", e.env.git_dirty}}}};
}

}  // namespace

json stats_ms_json(const measure::sample_summary& st) {
    return {{"n", st.n},
            {"median_ms", st.median * 1e3},
            {"mean_ms", st.mean * 1e3},
            {"std_ms", st.stdev * 1e3},
            {"min_ms", st.min * 1e3},
            {"max_ms", st.max * 1e3},
            {"p10_ms", st.p10 * 1e3},
            {"p90_ms", st.p90 * 1e3},
            {"q1_ms", st.q1 * 1e3},
            {"q3_ms", st.q3 * 1e3},
            {"iqr_ms", st.iqr * 1e3},
            {"cv", json_number(st.cv)}};
}

json to_json(const eval::ab_evaluation& ab) {
    json shapes = json::array();
    for (const auto& s : ab.shapes) {
        json row = {{"mode", s.mode},
                    {"shape", s.shape},
                    {"ok", s.ok},
                    {"error", s.error},
                    {"base", s.base_s ? stats_ms_json(*s.base_s) : json(nullptr)},
                    {"candidate", s.candidate_s ? stats_ms_json(*s.candidate_s) : json(nullptr)},
                    {"speedup", s.verdict ? json(s.verdict->speedup) : json(nullptr)},
                    {"ci_low", s.verdict ? json(s.verdict->ci_low) : json(nullptr)},
                    {"ci_high", s.verdict ? json(s.verdict->ci_high) : json(nullptr)},
                    {"verdict", s.verdict ? json(measure::to_string(s.verdict->verdict)) : json(nullptr)},
                    {"base_stop_reason", s.base_stop_reason},
                    {"candidate_stop_reason", s.candidate_stop_reason},
                    {"early_verdict", s.early_verdict.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.early_verdict)},
                    {"input_sets", s.input_sets},
                    {"flush_bytes", s.flush_bytes},
                    {"checks", {{"base", {{"total", s.base_checks_total}, {"failed", s.base_checks_failed}}},
                                {"candidate", {{"total", s.candidate_checks_total}, {"failed", s.candidate_checks_failed}}}}},
                    {"warnings", {{"base", warnings_json(s.base_warnings)}, {"candidate", warnings_json(s.candidate_warnings)}}},
                    {"base_samples_ms", ms_array(s.base_samples_s)},
                    {"candidate_samples_ms", ms_array(s.candidate_samples_s)}};
        shapes.push_back(std::move(row));
    }
    int ok_shapes = 0;
    for (const auto& s : ab.shapes) ok_shapes += s.ok ? 1 : 0;
    json overall = nullptr;
    if (ab.overall)
        overall = {{"geomean_speedup", ab.overall->speedup},
                   {"ci_low", ab.overall->ci_low},
                   {"ci_high", ab.overall->ci_high},
                   {"verdict", measure::to_string(ab.overall->verdict)},
                   {"shapes", ok_shapes}};
    const auto& env = ab.env;
    return {{"schema_version", ab_schema_version},
            {"kind", "kloop.compare"},
            {"kloop", kloop_build_json(env)},
            {"command_line", ab.command_line},
            {"op", ab.op},
            {"ok", ab.ok},
            {"reason", ab.reason},
            {"timed", ab.timed},
            {"runner_failure", ab.runner_failure},
            {"timing_wall_s", ab.timing_wall_s},
            {"seed", ab.seed},
            {"evict_bytes", ab.evict_bytes},
            {"host_load", host_load_json(ab.host_load)},
            {"warnings", warnings_json(ab.warnings)},
            {"device", ab.device},
            {"device_host", ab.device_host},
            {"config", {{"min_effect", ab.config.min_effect},
                        {"resamples", ab.config.resamples},
                        {"confidence", ab.config.confidence},
                        {"seed", ab.config.seed},
                        {"min_samples", ab.config.min_samples}}},
            {"env", {{"host_cpu", env.host_cpu},
                     {"logical_cpus", env.logical_cpus},
                     {"llc_bytes", env.llc_bytes},
                     {"compiler", env.compiler},
                     {"flags", env.flags}}},
            {"base", side_json(ab.base_label, ab.base)},
            {"candidate", side_json(ab.candidate_label, ab.candidate)},
            {"shapes", shapes},
            {"overall", overall},
            {"evaluations", {{"base", to_json(ab.base)}, {"candidate", to_json(ab.candidate)}}}};
}

}  // namespace kloop::report
