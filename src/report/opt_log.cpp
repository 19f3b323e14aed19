// kloop report: OPT_LOG.md (see opt_log.hpp).
#include "report/opt_log.hpp"

#include <fmt/format.h>

#include "report/detail/markdown.hpp"
#include "report/detail/prediction_text.hpp"

namespace kloop::report {

using namespace kloop::loop;

using detail::md_cell;
using detail::ms;

std::string opt_log_header(const contract& c, const iteration_record& baseline, const std::string& env_line) {
    std::string bench;
    for (const auto& b : baseline.bench) bench += fmt::format("{}/{} {} ms; ", b.mode, b.shape, ms(b.s.median));
    const auto g = geomean_median_s(baseline);
    std::string out = fmt::format("# OPT_LOG — {}\n\n", c.op);
    out += fmt::format("- **Env**: {}\n", env_line);
    out += fmt::format("- **Baseline** (v0, `{}`, sha256 {}, repo commit {}{}): {}geomean {} ms\n",
                       baseline.candidate_source, c.baseline_sha256.substr(0, 12),
                       c.baseline_git_commit.empty() ? "none" : c.baseline_git_commit.substr(0, 12),
                       c.baseline_git_dirty ? " dirty" : "", bench, g ? ms(*g) : "n/a");
    out += fmt::format("- **Target**: {} on the bench shapes, within {} iterations\n",
                       c.target_speedup ? fmt::format("x{:.2f} geomean speedup", *c.target_speedup) : std::string("no stated speedup"),
                       c.max_iterations);
    out += "- **Rule**: one change per iteration; every iteration (failed or not) gets a row and a commit. Classified "
           "against the current best by an interleaved A/B: positive = FASTER overall, negative = otherwise, rejected = "
           "build/gate/crash/timeout/integrity failure.\n\n";
    out += "| Iter | Direction | Gate | Bench median per shape (ms) | Predicted | vs best | Status |\n";
    out += "| --- | --- | --- | --- | --- | --- | --- |\n";
    return out;
}

std::string opt_log_row(const iteration_record& r) {
    std::string bench;
    for (const auto& b : r.bench) bench += fmt::format("{}{}/{} {}", bench.empty() ? "" : "; ", b.mode, b.shape, ms(b.s.median));
    if (bench.empty()) bench = "—";
    std::string gate = r.gate_pass ? (r.gate_partial ? "green (partial)" : "green") : "RED";
    std::string vs = "—";
    if (r.number == 0) vs = "baseline";
    else if (r.overall)
        vs = fmt::format("x{:.3f} [{:.3f}, {:.3f}] {} vs {}", r.overall->speedup, r.overall->ci_low, r.overall->ci_high,
                         measure::to_string(r.overall->verdict), version_label(r.vs_best));
    else if (r.vs_best >= 0) vs = "vs " + version_label(r.vs_best) + ": not timed";
    std::string status = to_string(r.status);
    if (r.status == iteration_status::rejected) status += " (" + to_string(r.rejection) + "): " + r.reason;
    if (r.outpaced_by) status += ", outpaced by its sibling " + version_label(*r.outpaced_by);
    return fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", version_label(r.number),
                       md_cell(r.number == 0 ? "baseline" : r.direction), gate, md_cell(bench),
                       md_cell(r.number == 0 ? "—" : detail::predicted_cell(r)), md_cell(vs), md_cell(status));
}

std::string append_missing_rows(const std::string& log, const std::vector<iteration_record>& records) {
    std::string out = log;
    for (const auto& r : records) {
        const std::string marker = "| " + version_label(r.number) + " |";
        if (out.find(marker) != std::string::npos) continue;
        if (!out.empty() && out.back() != '\n') out += '\n';
        out += opt_log_row(r);
    }
    return out;
}

}  // namespace kloop::report
