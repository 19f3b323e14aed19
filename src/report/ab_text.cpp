// kloop report: A/B comparison → console text.
#include "report/ab_text.hpp"
#include "core/text.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace kloop::report {

namespace {

std::string side_line(const char* what, const std::string& label, const eval::evaluation& e) {
    std::string build = !e.candidate_build.ok ? "build FAILED"
                                              : e.candidate_build.cache_hit ? std::string("build ok (cache hit)")
                                                                            : fmt::format("build ok ({:.1f} s)", e.candidate_build.wall_s);
    std::string gate = "gate not run";
    if (e.candidate_build.ok) {
        int failed = 0;
        for (const auto& c : e.gate.cases) failed += c.pass ? 0 : 1;
        const bool reused = e.repository && !e.repository->gate.empty() && e.repository->gate.front().reused;
        gate = reused ? fmt::format("gate PASS (reused: green on the same bytes, command and environment at {}, {:.1f} s "
                                    "saved)",
                                    e.repository->gate.front().reused->ran_at, e.repository->gate.front().reused->wall_s)
               : e.gate.pass ? fmt::format("gate PASS ({} cases{}, {:.1f} s)", e.gate.cases.size(),
                                           e.gate.partial ? ", PARTIAL" : "", e.gate.wall_s)
                           : fmt::format("gate FAIL ({} of {} cases, {:.1f} s)", failed, e.gate.cases.size(), e.gate.wall_s);
    }
    std::string out = fmt::format("{:<9} {} | git {} | {} | {}\n", what, label, git_text(e.env), build, gate);
    if (e.status != eval::disposition::passed && !e.reason.empty()) out += fmt::format("          RED: {}\n", e.reason);
    for (const auto& c : e.gate.cases)
        if (!c.pass) {
            out += fmt::format("          FAIL {}/{} trial {} (seed {}): {}\n", c.mode, c.shape, c.trial, c.seed, c.reason);
            break;  // the first; the JSON record has them all
        }
    if (!e.candidate_build.ok && !e.candidate_build.diagnostics.empty())
        out += "          compiler diagnostics:\n" + e.candidate_build.diagnostics + "\n";
    return out;
}

std::string ms(const std::optional<measure::sample_summary>& s) {
    return s ? fmt::format("{:.4f}", s->median * 1e3) : std::string("-");
}

}  // namespace

std::string git_text(const eval::environment_info& env) {
    if (!env.git_available) return "not a git repository";
    const auto c = env.git_commit.size() > 12 ? env.git_commit.substr(0, 12) : env.git_commit;
    return c + (env.git_dirty ? " dirty" : " clean");
}

std::string to_text(const eval::ab_evaluation& ab) {
    const auto& env = ab.env;
    std::string out = fmt::format("kloop compare {} | speedup = median(base) / median(new), > 1: new is faster\n", ab.op);
    out += side_line("base", ab.base_label, ab.base);
    out += side_line("candidate", ab.candidate_label, ab.candidate);
    out += fmt::format("env: {} ({} cpus, LLC {} MiB) | {} {} | kloop {} ({}{}, {})\n", env.host_cpu, env.logical_cpus,
                       env.llc_bytes >> 20, env.compiler, join(env.flags, " "), env.kloop_version, env.kloop_commit,
                       env.kloop_dirty ? " dirty" : "", env.build_type);
    if (!ab.timed) {
        out += "timing: not run (" + ab.reason + ")\n";
        out += "result: NOT COMPARED\n";
        return out;
    }
    if (const auto& repo = ab.candidate.repository; repo && !repo->ab_timing.empty())
        out += fmt::format("timing: the repository's bench, {}{} | {} run(s){}\n", repo->ab_timing,
                           repo->ab_timing_fallback.empty() ? "" : " (not in one process: " + repo->ab_timing_fallback + ")",
                           repo->bench.size(), ab.runner_failure.empty() ? "" : " | bench: " + ab.runner_failure);
    else
        out += fmt::format("timing: one runner, base and new interleaved (ABBA), same input sets, {} MiB of cold traffic "
                           "between two uses of a set | {:.1f} s{}\n",
                           ab.evict_bytes >> 20, ab.timing_wall_s, ab.runner_failure.empty() ? "" : " | runner: " + ab.runner_failure);
    for (const auto& w : ab.warnings) out += fmt::format("  warning ({}): {}\n", w.code, w.message);
    const int pct = static_cast<int>(ab.config.confidence * 100 + 0.5);
    out += fmt::format("  {:<5} {:<14} {:>10} {:>10} {:>9}  {:<18} {:<9} {:>11} {:>9}\n", "mode", "shape", "base_ms",
                       "new_ms", "speedup", fmt::format("{}% CI", pct), "verdict", "n base/new", "checked");
    for (const auto& s : ab.shapes) {
        const std::string n = fmt::format("{}/{}{}", s.base_samples_s.size(), s.candidate_samples_s.size(),
                                          s.early_verdict.empty() ? "" : " e");
        const std::string checked = fmt::format("{}/{}", (s.base_checks_total - s.base_checks_failed) +
                                                             (s.candidate_checks_total - s.candidate_checks_failed),
                                                s.base_checks_total + s.candidate_checks_total);
        if (s.verdict) {
            const auto& v = *s.verdict;
            out += fmt::format("  {:<5} {:<14} {:>10} {:>10} {:>8.3f}x  {:<18} {:<9} {:>11} {:>9}\n", s.mode, s.shape,
                               ms(s.base_s), ms(s.candidate_s), v.speedup,
                               fmt::format("[{:.3f}, {:.3f}]", v.ci_low, v.ci_high), measure::to_string(v.verdict), n,
                               checked);
        } else {
            out += fmt::format("  {:<5} {:<14} {:>10} {:>10} {:>9}  {:<18} {:<9} {:>11} {:>9}\n", s.mode, s.shape,
                               ms(s.base_s), ms(s.candidate_s), "-", "-", "ERROR", n, checked);
        }
        if (!s.ok) out += fmt::format("        ERROR: {}\n", s.error.empty() ? std::string("no result") : s.error);
        for (const auto& [side, warnings] : {std::pair{"base", &s.base_warnings}, std::pair{"new", &s.candidate_warnings}})
            for (const auto& w : *warnings) out += fmt::format("        warning, {} ({}): {}\n", side, w.code, w.message);
    }
    const double e = ab.config.min_effect;
    if (ab.overall) {
        int ok = 0;
        for (const auto& s : ab.shapes) ok += s.ok ? 1 : 0;
        const auto& o = *ab.overall;
        out += fmt::format("overall: geomean of {} shape{} (equal weight) {:.3f}x [{:.3f}, {:.3f}] {}{}\n", ok,
                           ok == 1 ? "" : "s", o.speedup, o.ci_low, o.ci_high, measure::to_string(o.verdict),
                           ok < static_cast<int>(ab.shapes.size()) ? " (failed shapes excluded, listed above)" : "");
    } else {
        out += "overall: no shape was timed on both sides\n";
    }
    out += fmt::format("verdict rule: minimum effect {:g} %: FASTER when the CI lies above {:.3f}, SLOWER below {:.3f}, "
                       "SAME inside, else AMBIGUOUS\n",
                       e * 100, 1 + e, 1 / (1 + e));
    if (std::any_of(ab.shapes.begin(), ab.shapes.end(), [](const auto& s) { return !s.early_verdict.empty(); }))
        out += "early verdict: the shapes marked e stopped once their verdict was settled at a look with a "
               "Bonferroni-corrected interval (docs/measurement.md; off: --no-early-verdict)\n";
    out += ab.ok ? "result: COMPARED\n" : "result: INCOMPLETE: " + ab.reason + "\n";
    return out;
}

}  // namespace kloop::report
