// kloop loop: iteration records (see iteration_record.hpp).
#include "loop/record/iteration_record.hpp"

#include <cmath>

#include <fmt/format.h>

#include "core/json_number.hpp"
namespace kloop::loop {

using nlohmann::json;

namespace {


json stats_json(const measure::sample_summary& s) {
    return {{"n", s.n},
            {"median_ms", json_number(s.median * 1e3)},
            {"mean_ms", json_number(s.mean * 1e3)},
            {"std_ms", json_number(s.stdev * 1e3)},
            {"min_ms", json_number(s.min * 1e3)},
            {"max_ms", json_number(s.max * 1e3)},
            {"p10_ms", json_number(s.p10 * 1e3)},
            {"p90_ms", json_number(s.p90 * 1e3)},
            {"cv", json_number(s.cv)}};
}
measure::sample_summary stats_from(const json& j) {
    measure::sample_summary s;
    s.n = j.at("n");
    s.median = number_from_json(j.at("median_ms")) / 1e3;
    s.mean = number_from_json(j.at("mean_ms")) / 1e3;
    s.stdev = number_from_json(j.at("std_ms")) / 1e3;
    s.min = number_from_json(j.at("min_ms")) / 1e3;
    s.max = number_from_json(j.at("max_ms")) / 1e3;
    s.p10 = number_from_json(j.at("p10_ms")) / 1e3;
    s.p90 = number_from_json(j.at("p90_ms")) / 1e3;
    s.cv = number_from_json(j.value("cv", json(0.0)));
    return s;
}

json verdict_json(const measure::ab_result& r) {
    return {{"speedup", json_number(r.speedup)}, {"ci_low", json_number(r.ci_low)}, {"ci_high", json_number(r.ci_high)},
            {"verdict", measure::to_string(r.verdict)}};
}
measure::ab_result verdict_from(const json& j) {
    measure::ab_result r;
    r.speedup = number_from_json(j.at("speedup"));
    r.ci_low = number_from_json(j.at("ci_low"));
    r.ci_high = number_from_json(j.at("ci_high"));
    r.verdict = measure::ab_verdict_from_string(j.at("verdict"));
    return r;
}

}  // namespace

std::string version_label(int n) { return "v" + std::to_string(n); }

json to_json(const iteration_record& r) {
    json bench = json::array();
    for (const auto& b : r.bench) {
        json row = stats_json(b.s);
        row["mode"] = b.mode;
        row["shape"] = b.shape;
        bench.push_back(row);
    }
    json ab = nullptr;
    if (!r.ab.empty() || r.overall) {
        json shapes = json::array();
        for (const auto& c : r.ab) {
            json row = {{"mode", c.mode}, {"shape", c.shape}, {"ok", c.ok}, {"error", c.error},
                        {"best", c.best_s ? stats_json(*c.best_s) : json(nullptr)},
                        {"candidate", c.candidate_s ? stats_json(*c.candidate_s) : json(nullptr)}};
            if (c.verdict) row.update(verdict_json(*c.verdict));
            shapes.push_back(row);
        }
        ab = {{"shapes", shapes}, {"overall", r.overall ? verdict_json(*r.overall) : json(nullptr)}, {"min_effect", r.min_effect}};
    }
    json predictions = json::array();
    for (const auto& p : r.predictions) predictions.push_back(to_json(p));
    json facts = json::object();
    for (const auto& [name, value] : r.profile_facts) facts[name] = json_number(value);
    return {{"number", r.number},
            {"status", to_string(r.status)},
            {"rejection", to_string(r.rejection)},
            {"reason", r.reason},
            {"candidate_source", r.candidate_source},
            {"candidate_file", r.candidate_file},
            {"candidate_sha256", r.candidate_sha256},
            {"local_files", r.local_files},
            {"sources_sha256", r.sources_sha256},
            {"proposal", {{"direction", r.direction}, {"expected", r.expected}, {"tags", r.tags},
                          {"blocked_override", r.blocked_override}}},
            {"predictions", predictions},
            {"fingerprint", r.fingerprint},
            {"vs_best", r.vs_best},
            {"outpaced_by", r.outpaced_by ? json(*r.outpaced_by) : json(nullptr)},
            {"device", r.device},
            {"gate", {{"pass", r.gate_pass}, {"partial", r.gate_partial}}},
            {"bench_ok", r.bench_ok},
            {"bench", bench},
            {"ab", ab},
            {"git", {{"in_repo", r.git.in_repo}, {"committed", r.git.committed}, {"commit", r.git.commit}, {"note", r.git.note},
                     {"repair", r.git.repair}}},
            {"profile", {{"status", r.profile_status},
                         {"note", r.profile_note},
                         {"bound", r.profile_bound},
                         {"suspect", r.suspect},
                         {"suspect_reasons", r.suspect_reasons},
                         {"facts", facts}}},
            {"warnings", r.warnings},
            {"recorded_at", r.recorded_at}};
}

iteration_record iteration_record_from_json(const json& j) {
    iteration_record r;
    r.number = j.at("number");
    r.status = iteration_status_from_string(j.at("status"));
    r.rejection = rejection_kind_from_string(j.at("rejection"));
    r.reason = j.at("reason");
    r.candidate_source = j.at("candidate_source");
    r.candidate_file = j.at("candidate_file");
    r.candidate_sha256 = j.at("candidate_sha256");
    r.local_files = j.value("local_files", std::vector<std::string>{});
    r.sources_sha256 = j.value("sources_sha256", std::string());
    r.direction = j.at("proposal").at("direction");
    r.expected = j.at("proposal").at("expected");
    r.tags = j.at("proposal").at("tags").get<std::vector<std::string>>();
    r.blocked_override = j.at("proposal").value("blocked_override", std::string());
    if (const auto it = j.find("predictions"); it != j.end() && it->is_array())
        for (const auto& p : *it) r.predictions.push_back(scored_prediction_from_json(p));
    r.fingerprint = j.at("fingerprint");
    r.vs_best = j.at("vs_best");
    if (const auto it = j.find("outpaced_by"); it != j.end() && it->is_number_integer()) r.outpaced_by = it->get<int>();
    r.device = j.value("device", std::string());
    r.gate_pass = j.at("gate").at("pass");
    r.gate_partial = j.at("gate").at("partial");
    r.bench_ok = j.at("bench_ok");
    for (const auto& b : j.at("bench")) r.bench.push_back({b.at("mode"), b.at("shape"), stats_from(b)});
    if (const auto& ab = j.at("ab"); !ab.is_null()) {
        for (const auto& c : ab.at("shapes")) {
            shape_comparison sc;
            sc.mode = c.at("mode");
            sc.shape = c.at("shape");
            sc.ok = c.at("ok");
            sc.error = c.at("error");
            if (!c.at("best").is_null()) sc.best_s = stats_from(c.at("best"));
            if (!c.at("candidate").is_null()) sc.candidate_s = stats_from(c.at("candidate"));
            if (c.contains("verdict")) sc.verdict = verdict_from(c);
            r.ab.push_back(std::move(sc));
        }
        if (!ab.at("overall").is_null()) r.overall = verdict_from(ab.at("overall"));
        r.min_effect = ab.value("min_effect", 0.0);
    }
    const auto& g = j.at("git");
    r.git = {g.at("in_repo"), g.at("committed"), g.at("commit"), g.at("note"), g.value("repair", std::string())};
    r.profile_status = j.at("profile").at("status");
    r.profile_note = j.at("profile").at("note");
    r.profile_bound = j.at("profile").value("bound", "");
    r.suspect = j.at("profile").value("suspect", false);
    r.suspect_reasons = j.at("profile").value("suspect_reasons", std::vector<std::string>{});
    if (const auto& p = j.at("profile"); p.contains("facts") && p.at("facts").is_object())
        for (const auto& [name, value] : p.at("facts").items()) r.profile_facts[name] = number_from_json(value);
    r.warnings = j.at("warnings").get<std::vector<std::string>>();
    r.recorded_at = j.at("recorded_at");
    return r;
}

std::vector<shape_stats> bench_stats_of(const eval::evaluation& e) {
    std::vector<shape_stats> out;
    for (const auto& s : e.bench.shapes)
        if (s.ok && s.stats_s) out.push_back({s.mode, s.shape, *s.stats_s});
    return out;
}

std::vector<shape_comparison> comparisons_of(const eval::ab_evaluation& ab) {
    std::vector<shape_comparison> out;
    for (const auto& s : ab.shapes) out.push_back({s.mode, s.shape, s.ok, s.error, s.base_s, s.candidate_s, s.verdict});
    return out;
}

std::vector<shape_stats> candidate_stats_of(const eval::ab_evaluation& ab) {
    std::vector<shape_stats> out;
    for (const auto& s : ab.shapes)
        if (s.ok && s.candidate_s) out.push_back({s.mode, s.shape, *s.candidate_s});
    return out;
}

namespace {
std::optional<double> geomean_of(const iteration_record& r, bool median) {
    if (!r.bench_ok || r.bench.empty()) return std::nullopt;
    double acc = 0;
    for (const auto& b : r.bench) {
        const double v = median ? b.s.median : b.s.mean;
        if (!(v > 0)) return std::nullopt;
        acc += std::log(v);
    }
    return std::exp(acc / static_cast<double>(r.bench.size()));
}
}  // namespace

std::optional<double> geomean_median_s(const iteration_record& r) { return geomean_of(r, true); }
std::optional<double> geomean_mean_s(const iteration_record& r) { return geomean_of(r, false); }

std::string commit_message(const std::string& op, const iteration_record& r) {
    std::string detail;
    if (r.status == iteration_status::rejected) detail = "rejected: " + to_string(r.rejection);
    else if (r.overall)
        detail = fmt::format("{}: {} x{:.3f} vs {}", to_string(r.status), measure::to_string(r.overall->verdict), r.overall->speedup,
                             version_label(r.vs_best));
    else detail = to_string(r.status);
    std::string direction = r.direction.size() > 60 ? r.direction.substr(0, 57) + "..." : r.direction;
    return fmt::format("kloop {} {} ({}): {}", op, version_label(r.number), detail, direction);
}

}  // namespace kloop::loop
