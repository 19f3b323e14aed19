// kloop report: evaluation → JSON.
#include "report/evaluation_json.hpp"

#include <cmath>

#include "report/repository_run_report.hpp"
#include "check/tolerance_judge.hpp"

#include "core/json_number.hpp"

namespace kloop::report {

using nlohmann::json;

namespace {


json build_json(const eval::build_summary& b) {
    json j = {{"ok", b.ok},
              {"cache_hit", b.cache_hit},
              {"library", b.library},
              {"argv", b.argv},
              {"compiler_version", b.compiler_version},
              {"diagnostics", b.diagnostics},
              {"wall_s", b.wall_s}};
    if (!b.device.empty()) j["device"] = b.device;
    if (!b.target.empty()) j["target"] = b.target;
    if (!b.ptxas.is_null()) j["ptxas"] = b.ptxas;
    return j;
}

json errors_json(const check::compare_metrics& m) {
    return {{"max_abs", json_number(m.max_abs)},       {"max_rel", json_number(m.max_rel)},
            {"rel_rms", json_number(m.rel_rms)},       {"mismatches", m.mismatches},
            {"first_bad_index", m.first_bad},     {"nan", m.nan_count},
            {"inf", m.inf_count},                 {"n", m.n}};
}

json gate_json(const eval::gate_report& g) {
    json cases = json::array();
    for (const auto& c : g.cases) {
        // A row's reason: the case's first failure, unless that failure is this output's own
        // comparison, which is then given in the output's words.
        auto row_reason = [&](const eval::output_report* o) -> std::string {
            if (c.pass) return "";
            if (o != nullptr && !o->pass && c.reason.rfind("output '" + o->name + "'", 0) == 0) return o->reason;
            return c.reason;
        };
        auto row = [&](const eval::output_report* o) {
            json r = {{"id", c.id},
                      {"mode", c.mode},
                      {"shape", c.shape},
                      {"trial", c.trial},
                      {"seed", c.seed},
                      {"output", o ? json(o->name) : json(nullptr)},
                      {"status", (o ? o->pass && c.pass : c.pass) ? "pass" : "fail"},
                      {"errors", o ? errors_json(o->metrics) : json(nullptr)},
                      {"reason", row_reason(o)}};
            if (c.deterministic) r["deterministic"] = *c.deterministic;
            r["call_s"] = c.call_s;
            r["candidate_s"] = c.candidate_s;
            return r;
        };
        if (c.outputs.empty()) cases.push_back(row(nullptr));
        for (const auto& o : c.outputs) cases.push_back(row(&o));
    }
    json held_out = json::array();
    for (const auto& h : g.held_out) {
        json dims = json::object(), params = json::object();
        for (const auto& [name, v] : h.dims) dims[name] = v;
        for (const auto& p : h.params) params[p.name] = p.is_integer ? json(static_cast<std::int64_t>(p.value)) : json(p.value);
        held_out.push_back({{"mode", h.mode}, {"shape", h.shape}, {"dims", dims}, {"params", params}});
    }
    return {{"status", g.pass ? "pass" : "fail"},
            {"partial", g.partial},
            {"gate_k", g.gate_k},
            {"seeds", g.seeds},
            {"held_out", held_out},
            {"runner_failure", g.runner_failure},
            {"wall_s", g.wall_s},
            {"cases", cases}};
}

}  // namespace

json kloop_build_json(const eval::environment_info& env) {
    return {{"version", env.kloop_version}, {"commit", env.kloop_commit}, {"dirty", env.kloop_dirty},
            {"build_type", env.build_type}};
}

json host_load_json(const platform::host_load_report& l) {
    return {{"samples", l.samples}, {"busy_samples", l.busy_samples}, {"max_other", l.max_other},
            {"mean_other", l.mean_other}, {"busy", l.busy()}};
}

json warnings_json(const std::vector<measure::sample_warning>& warnings) {
    json out = json::array();
    for (const auto& w : warnings) out.push_back({{"code", w.code}, {"message", w.message}});
    return out;
}

namespace {

json bench_json(const eval::bench_report& b) {
    json shapes = json::array();
    for (const auto& s : b.shapes) {
        json r = {{"mode", s.mode},
                  {"shape", s.shape},
                  {"ok", s.ok},
                  {"error", s.error},
                  {"stop_reason", s.stop_reason},
                  {"warmup_calls", s.warmup_calls},
                  {"input_sets", s.input_sets},
                  {"flush_bytes", s.flush_bytes},
                  {"checks_total", s.checks_total},
                  {"checks_failed", s.checks_failed},
                  {"warnings", warnings_json(s.warnings)}};
        if (s.flops) r["flops"] = *s.flops;
        if (s.bytes) r["bytes"] = *s.bytes;
        if (s.stats_s) {
            const auto& st = *s.stats_s;
            r["n"] = st.n;
            r["median_ms"] = st.median * 1e3;
            r["mean_ms"] = st.mean * 1e3;
            r["std_ms"] = st.stdev * 1e3;
            r["min_ms"] = st.min * 1e3;
            r["max_ms"] = st.max * 1e3;
            r["p10_ms"] = st.p10 * 1e3;
            r["p90_ms"] = st.p90 * 1e3;
            r["q1_ms"] = st.q1 * 1e3;
            r["q3_ms"] = st.q3 * 1e3;
            r["iqr_ms"] = st.iqr * 1e3;
            r["cv"] = json_number(st.cv);
            if (s.flops && st.median > 0) r["gflops"] = *s.flops / st.median * 1e-9;
            if (s.bytes && st.median > 0) r["gbps"] = *s.bytes / st.median * 1e-9;
            json raw = json::array();
            for (double x : s.samples_s) raw.push_back(x * 1e3);
            r["samples_ms"] = raw;
        } else {
            r["n"] = 0;
        }
        if (s.graph_replay_s_per_call) {
            r["graph_replay_s_per_call"] = *s.graph_replay_s_per_call;
            r["graph_replay_ms_per_call"] = *s.graph_replay_s_per_call * 1e3;
        }
        if (!s.graph_replay_error.empty()) r["graph_replay_error"] = s.graph_replay_error;
        if (s.discarded_samples > 0) r["discarded_samples"] = s.discarded_samples;
        if (s.sm_clock_mhz_median) r["sm_clock_mhz_median"] = *s.sm_clock_mhz_median;
        shapes.push_back(std::move(r));
    }
    return {{"ran", b.ran},
            {"status", !b.ran ? "not_run" : b.ok ? "pass" : "fail"},
            {"seed", b.seed},
            {"evict_bytes", b.evict_bytes},
            {"runner_failure", b.runner_failure},
            {"wall_s", b.wall_s},
            {"host_load", host_load_json(b.host_load)},
            {"warnings", warnings_json(b.warnings)},
            {"shapes", shapes}};
}

}  // namespace

json to_json(const eval::evaluation& e) {
    json integrity = json::array();
    for (const auto& c : e.integrity)
        integrity.push_back({{"name", c.name}, {"status", eval::to_string(c.status)}, {"detail", c.detail}});
    json j = {{"schema_version", evaluation_schema_version},
            {"kloop", kloop_build_json(e.env)},
            {"command_line", e.command_line},
            {"op", e.op},
            {"candidate", e.candidate},
            {"status", eval::to_string(e.status)},
            {"reason", e.reason},
            {"env", {{"host_cpu", e.env.host_cpu},
                     {"logical_cpus", e.env.logical_cpus},
                     {"llc_bytes", e.env.llc_bytes},
                     {"compiler", e.env.compiler},
                     {"flags", e.env.flags},
                     {"git", {{"available", e.env.git_available}, {"commit", e.env.git_commit}, {"dirty", e.env.git_dirty}}}}},
            {"build", {{"candidate", build_json(e.candidate_build)}, {"reference", build_json(e.reference_build)}}},
            {"gate", gate_json(e.gate)},
            {"bench", bench_json(e.bench)},
            {"integrity", integrity},
            {"isolation", e.isolation},
            {"confined", e.is_confined()}};
    if (e.repository) j["blackbox"] = repository_run_json(*e.repository);  // docs/blackbox.md, "Record"
    return j;
}

}  // namespace kloop::report
