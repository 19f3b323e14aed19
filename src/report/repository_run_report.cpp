// kloop report: text and JSON of a repository run (see repository_run_report.hpp).
#include "report/repository_run_report.hpp"

#include <fmt/format.h>

#include "report/evaluation_text.hpp"

namespace kloop::report {

using nlohmann::json;

namespace {

std::string quoted_argv(const std::vector<std::string>& argv) {
    std::string s;
    for (const auto& a : argv) {
        const bool plain = !a.empty() && a.find_first_of(" \t\"'\\$`*?;&|<>()") == std::string::npos;
        s += (s.empty() ? "" : " ") + (plain ? a : "'" + a + "'");
    }
    return s;
}

// The last `n` non-empty lines, indented; the record keeps the whole tail.
std::string last_lines(const std::string& text, std::size_t n) {
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < text.size()) {
        const auto nl = text.find('\n', start);
        const auto line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
        if (!line.empty()) lines.push_back(line);
        if (nl == std::string::npos) break;
        start = nl + 1;
    }
    std::string out;
    for (std::size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) out += "    " + lines[i] + "\n";
    return out;
}

json command_json(const eval::command_run& r) {
    json env = json::object();
    for (const auto& [k, v] : r.env) env[k] = v;
    return {{"argv", r.argv},         {"cwd", r.cwd},
            {"env", env},             {"env_line", r.env_line},
            {"started", r.started},   {"exit_code", r.exit_code},
            {"term_signal", r.term_signal}, {"timed_out", r.timed_out},
            {"timeout_s", r.timeout_s},     {"wall_s", r.wall_s},
            {"ended", r.ended},             {"stdout_tail", r.stdout_tail},
            {"stderr_tail", r.stderr_tail}, {"log_stem", r.log_stem}};
}

json summary_json(const eval::pytest_summary& s) {
    json failures = json::array();
    for (const auto& f : s.failures) failures.push_back({{"kind", f.kind}, {"node_id", f.node_id}, {"message", f.message}});
    json other = json::object();
    for (const auto& [k, v] : s.other) other[k] = v;
    return {{"found", s.found},
            {"line", s.line},
            {"no_tests_ran", s.no_tests_ran},
            {"passed", s.passed},
            {"failed", s.failed},
            {"errors", s.errors},
            {"skipped", s.skipped},
            {"xfailed", s.xfailed},
            {"xpassed", s.xpassed},
            {"deselected", s.deselected},
            {"warnings", s.warnings},
            {"rerun", s.rerun},
            {"other", other},
            {"duration_s", s.duration_s ? json(*s.duration_s) : json(nullptr)},
            {"failures", failures},
            {"failures_total", s.failures_total}};
}

}  // namespace

json repository_run_json(const eval::repository_run& r) {
    json gate = json::array();
    for (const auto& g : r.gate) {
        json j = command_json(g.run);
        j["green"] = g.green;
        j["partial"] = g.partial;
        j["gate_k"] = g.gate_k;
        j["reason"] = g.reason;
        j["summary"] = summary_json(g.summary);
        j["reused"] = g.reused ? json{{"key", g.reused->key}, {"ran_at", g.reused->ran_at}, {"wall_s", g.reused->wall_s}}
                               : json(nullptr);
        gate.push_back(std::move(j));
    }
    json bench = json::array();
    for (const auto& b : r.bench) {
        json j = command_json(b.run);
        j["side"] = b.side;
        j["round"] = b.round;
        j["ok"] = b.ok;
        j["error"] = b.error;
        bench.push_back(std::move(j));
    }
    return {{"repo_root", r.repo_root}, {"target", r.target},   {"placement", r.placement}, {"copied_files", r.copied_files},
            {"frozen", r.frozen},       {"refused_env", r.refused_env}, {"gate", gate},    {"bench", bench},
            {"ab_timing", r.ab_timing}, {"ab_timing_fallback", r.ab_timing_fallback}};
}

std::string repository_run_text(const eval::evaluation& e) {
    const eval::repository_run& r = *e.repository;
    std::string out;
    out += fmt::format("kloop verify {} (black box) | candidate {}\n", e.op, e.candidate);
    out += environment_line(e.env) + "\n";
    out += fmt::format("repo: {} | target {} (the candidate is placed in a temporary copy, {} files; the repository is "
                       "never written)\n",
                       r.repo_root, r.target, r.copied_files);
    const auto& g = e.gate;
    if (!r.gate.empty()) {
        const auto& gr = r.gate.front();
        const auto& s = gr.summary;
        out += fmt::format("gate: {}{} | {} | {} | {} | {:.2f} s\n", g.pass ? "PASS" : "FAIL",
                           gr.partial ? " (PARTIAL: --gate-k '" + gr.gate_k + "' → pytest -k, never promotable)" : "",
                           quoted_argv(gr.run.argv), gr.run.ended, s.found ? s.line : "no pytest summary line", gr.run.wall_s);
        if (s.found)
            out += fmt::format("  counts: passed {}, failed {}, errors {}, skipped {}, xfailed {}, xpassed {}, deselected {}, "
                               "warnings {}\n",
                               s.passed, s.failed, s.errors, s.skipped, s.xfailed, s.xpassed, s.deselected, s.warnings);
        out += fmt::format("  env: {}\n", gr.run.env_line);
        if (gr.reused)
            out += fmt::format("  reused: the same repository bytes, command and environment were green at {} ({:.1f} s "
                               "saved; key {})\n",
                               gr.reused->ran_at, gr.reused->wall_s, gr.reused->key.substr(0, 16));
        for (const auto& f : s.failures) out += fmt::format("  {} {}{}\n", f.kind, f.node_id, f.message.empty() ? "" : " - " + f.message);
        if (s.failures_total > static_cast<int>(s.failures.size()))
            out += fmt::format("  ... and {} more\n", s.failures_total - static_cast<int>(s.failures.size()));
        if (!g.pass) {
            out += "  reason: " + gr.reason + "\n";
            if (!s.found && !gr.run.stderr_tail.empty()) out += "  stderr (last lines):\n" + last_lines(gr.run.stderr_tail, 12);
            else if (!s.found && !gr.run.stdout_tail.empty()) out += "  stdout (last lines):\n" + last_lines(gr.run.stdout_tail, 12);
        }
    }

    if (e.bench.ran) {
        std::string runs;
        for (const auto& b : r.bench) runs += fmt::format("{}{}", runs.empty() ? "" : ", ", b.run.ended);
        out += fmt::format("bench: {} | {} | {} run(s): {}\n", e.bench.ok ? "ok" : "FAILED",
                           r.bench.empty() ? std::string("-") : quoted_argv(r.bench.front().run.argv), r.bench.size(), runs);
        for (const auto& b : r.bench)
            if (!b.ok) out += "  FAIL: " + b.error + "\n";
        out += fmt::format("  {:<6} {:<16} {:>5} {:>11} {:>10} {:>9} {:>10} {:>10} {:>10} {:>7} {:>9}\n", "mode", "shape", "n",
                           "median_ms", "mean_ms", "std_ms", "min_ms", "p10_ms", "p90_ms", "cv", "GB/s");
        for (const auto& s : e.bench.shapes) {
            if (!s.stats_s) {
                out += fmt::format("  {:<6} {:<16} {}\n", s.mode, s.shape, s.error.empty() ? "no samples" : s.error);
                continue;
            }
            const auto& st = *s.stats_s;
            const std::string gbps = s.bytes && st.median > 0 ? fmt::format("{:.2f}", *s.bytes / st.median * 1e-9) : "-";
            out += fmt::format("  {:<6} {:<16} {:>5} {:>11.4f} {:>10.4f} {:>9.4f} {:>10.4f} {:>10.4f} {:>10.4f} {:>6.2f}% {:>9}\n",
                               s.mode, s.shape, st.n, st.median * 1e3, st.mean * 1e3, st.stdev * 1e3, st.min * 1e3,
                               st.p10 * 1e3, st.p90 * 1e3, st.cv * 100, gbps);
        }
    } else if (g.pass) {
        out += "bench: not run (--no-bench)\n";
    } else {
        out += "bench: not run (red gate: no speedup is reported on a red gate)\n";
    }

    out += integrity_and_result_lines(e);
    return out;
}

}  // namespace kloop::report
