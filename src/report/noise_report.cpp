// kloop report: `kloop noise` — record and text (see noise_report.hpp).
#include "report/noise_report.hpp"

#include <cmath>

#include <fmt/format.h>

#include "report/ab_text.hpp"
#include "report/evaluation_json.hpp"

namespace kloop::report {

using nlohmann::json;

namespace {

json counts_json(const measure::verdict_counts& v) {
    return {{"FASTER", v.faster}, {"SLOWER", v.slower}, {"SAME", v.same}, {"AMBIGUOUS", v.ambiguous}};
}

}  // namespace

json noise_not_timed_json(const std::string& reason) {
    return {{"schema_version", noise_schema_version}, {"kind", "kloop.noise"}, {"ok", false}, {"reason", reason}};
}

json to_json(const noise_record& r) {
    json shapes = json::array();
    for (const auto& n : r.summary.shapes) {
        shapes.push_back({{"mode", n.mode},
                          {"shape", n.shape},
                          {"runs", n.verdicts.total()},
                          {"failed_runs", n.failed},
                          {"speedups", n.speedups},
                          {"median_abs_log_speedup", n.median_abs_log_speedup()},
                          {"noise_floor", n.noise_floor()},
                          {"max_deviation", n.max_deviation()},
                          {"median_ci_half_width", n.median_half_width()},
                          {"verdicts", counts_json(n.verdicts)},
                          {"false_verdict_rate", n.false_verdict_rate()}});
    }
    const auto& env = r.env;
    const auto& s = r.summary;
    return {{"schema_version", noise_schema_version},
            {"kind", "kloop.noise"},
            {"kloop", kloop_build_json(env)},
            {"command_line", r.command_line},
            {"op", r.op},
            {"candidate", r.candidate},
            {"git", {{"available", env.git_available}, {"commit", env.git_commit}, {"dirty", env.git_dirty}}},
            {"env", {{"host_cpu", env.host_cpu}, {"logical_cpus", env.logical_cpus}, {"llc_bytes", env.llc_bytes},
                     {"compiler", env.compiler}, {"flags", env.flags},
                     {"load_average_before", r.load_before}, {"load_average_after", r.load_after}}},
            {"runs", r.runs},
            {"ok", r.ok},
            {"reason", r.reason},
            {"config", {{"min_effect", r.ab.min_effect}, {"resamples", r.ab.resamples}, {"confidence", r.ab.confidence},
                        {"min_samples", r.ab.min_samples},
                        {"stop", {{"min_samples", r.stop.min_samples}, {"min_time_s", r.stop.min_time_s},
                                  {"max_time_s", r.stop.max_time_s},
                                  {"target_rel_stdev", r.stop.target_rel_stdev}}}}},
            {"shapes", shapes},
            {"host_load", [&] {
                 json l = host_load_json(r.host_load);
                 l["busy_runs"] = r.busy_runs;
                 return l;
             }()},
            {"warnings", warnings_json(r.warnings)},
            {"engine", r.engine},
            {"run_devices", r.run_devices},
            {"slurm_jobs", r.slurm_jobs},
            {"overall", {{"shape_verdicts", s.shape_verdicts},
                         {"false_verdicts", s.false_verdicts},
                         {"false_verdict_rate", s.false_verdict_rate()},
                         {"allowed_false_verdict_rate", measure::allowed_false_verdict_rate},
                         {"within_allowed", s.within_allowed()},
                         {"geomean_verdicts", counts_json(s.geomean_verdicts)}}}};
}

std::string noise_header(const std::string& op, const std::string& candidate, int runs, const eval::ab_evaluation& first) {
    std::string out = fmt::format("kloop noise {} | {} against itself, {} runs\n", op, candidate, runs);
    out += "  per-shape marks, in order:";
    for (const auto& s : first.shapes) out += " " + s.mode + "/" + s.shape;
    return out + "\n";
}

std::string noise_run_line(int index, int runs, const eval::ab_evaluation& r) {
    std::string out = fmt::format("  run {:>3}/{}: ", index + 1, runs);
    if (r.overall)
        out += fmt::format("geomean {:.4f}x [{:.4f}, {:.4f}] {}", r.overall->speedup, r.overall->ci_low, r.overall->ci_high,
                           measure::to_string(r.overall->verdict));
    else
        out += "no overall verdict";
    // Every shape's verdict, so a run cut short still shows its shape verdicts.
    out += " | per shape";
    for (const auto& s : r.shapes) {
        const char* mark = "x";
        if (s.verdict) switch (s.verdict->verdict) {
                case measure::ab_verdict::faster: mark = "+"; break;
                case measure::ab_verdict::slower: mark = "-"; break;
                case measure::ab_verdict::same: mark = "="; break;
                case measure::ab_verdict::ambiguous: mark = "?"; break;
            }
        out += std::string(" ") + mark;
    }
    if (!r.ok) out += " | " + r.reason;
    // A black-box run: whether its rounds timed both sides in one process (docs/blackbox.md).
    if (const auto& repo = r.candidate.repository; repo && !repo->ab_timing.empty())
        out += repo->ab_timing_fallback.empty() && repo->ab_timing.rfind("one process", 0) == 0
                   ? " | one process"
                   : " | separate processes" + (repo->ab_timing_fallback.empty() ? "" : ": " + repo->ab_timing_fallback);
    if (!r.device.empty()) out += " | on " + r.device + (r.device_host.empty() ? "" : " (" + r.device_host + ")");
    return out + "\n";
}

std::string to_text(const noise_record& r) {
    const auto& env = r.env;
    const auto& s = r.summary;
    std::string out = fmt::format("env: {} ({} cpus) | {} | candidate git {} | load average {} before, {} after\n",
                                  env.host_cpu, env.logical_cpus, env.compiler, git_text(env), r.load_before, r.load_after);
    out += fmt::format("  {:<5} {:<14} {:>5} {:>12} {:>14} {:>14} {:>7} {:>7} {:>5} {:>10}\n", "mode", "shape", "runs",
                       "noise floor", "max deviation", "CI half-width", "FASTER", "SLOWER", "SAME", "AMBIGUOUS");
    for (const auto& n : s.shapes)
        out += fmt::format("  {:<5} {:<14} {:>5} {:>11.2f}% {:>13.2f}% {:>13.2f}% {:>7} {:>7} {:>5} {:>10}{}\n", n.mode,
                           n.shape, n.verdicts.total(), n.noise_floor() * 100, n.max_deviation() * 100,
                           n.median_half_width() * 100, n.verdicts.faster, n.verdicts.slower, n.verdicts.same,
                           n.verdicts.ambiguous, n.failed ? fmt::format("  ({} runs failed)", n.failed) : "");
    out += "  (noise floor: median |log speedup| over the runs, as a percentage; CI half-width: median "
           "half-width of the 95 % interval)\n";
    out += fmt::format("false verdicts (FASTER/SLOWER of A against A): {} of {} shape verdicts = {:.1f} % "
                       "(allowed {:.0f} % at min effect {:g} %): {}\n",
                       s.false_verdicts, s.shape_verdicts, s.false_verdict_rate() * 100,
                       measure::allowed_false_verdict_rate * 100, r.ab.min_effect * 100,
                       s.within_allowed() ? "OK" : "TOO NOISY");
    for (const auto& w : r.warnings) out += fmt::format("  warning ({}): {}\n", w.code, w.message);
    out += fmt::format("overall geomean verdicts: {} FASTER, {} SLOWER, {} SAME, {} AMBIGUOUS\n", s.geomean_verdicts.faster,
                       s.geomean_verdicts.slower, s.geomean_verdicts.same, s.geomean_verdicts.ambiguous);
    if (!r.ok) out += "NOT OK: " + r.reason + "\n";
    return out;
}

}  // namespace kloop::report
