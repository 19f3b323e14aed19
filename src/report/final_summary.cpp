// kloop report: final_summary.md (see final_summary.hpp).
#include "report/final_summary.hpp"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/detail/markdown.hpp"
#include "report/detail/prediction_text.hpp"

namespace kloop::report {

using namespace kloop::loop;
using detail::md_cell;
using detail::ms;

namespace {

std::string stats_cells(const measure::sample_summary& s) {
    return fmt::format("{} | {} | {} | {} | {} | {} | {}", s.n, ms(s.median), ms(s.mean), ms(s.stdev), ms(s.min), ms(s.p10), ms(s.p90));
}

// ", with its local files `a.hpp` `b.hpp` (all sources sha256 …)" for a version that has them.
std::string local_files_note(const iteration_record& r) {
    if (r.local_files.empty()) return {};
    std::string files;
    for (const auto& f : r.local_files) files += fmt::format(" `{}`", f);
    return fmt::format(", with its local files{} (all sources sha256 {})", files, r.sources_sha256);
}

std::string rate_text(const calibration_tally& t) {
    const auto rate = t.hit_rate();
    return rate ? fmt::format("{:.0f} %", *rate * 100) : "—";
}

std::string spread_text(const calibration_tally& t) {
    return t.median_abs_log_off_by ? fmt::format("{:.3f} (x{:.3f})", *t.median_abs_log_off_by, std::exp(*t.median_abs_log_off_by))
                                   : "—";
}

std::string calibration_md(const proposer_calibration& c) {
    std::string md = "\n## Proposer calibration\n\n";
    if (c.all.made == 0)
        return md + "No proposal carried a machine-readable prediction (`Prediction: speedup 1.1-1.3`; docs/loop.md): "
                    "nothing to calibrate.\n";
    md += "How well the proposals' pre-registered predictions matched the measurements. Spread: the median "
          "|ln off_by| of the misses (off_by = measured / the nearest bound). Optimistic: measured below the predicted "
          "range (for `no change`: slower); pessimistic: above it.\n\n";
    md += "| kind | made | scored | hits | hit rate | spread of misses | optimistic | pessimistic |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
    auto row = [&](const std::string& kind, const calibration_tally& t) {
        md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", kind, t.made, t.scored, t.hits, rate_text(t), spread_text(t),
                          t.optimistic, t.pessimistic);
    };
    for (const auto& [kind, t] : c.by_kind)
        if (t.made > 0) row(to_string(kind), t);
    row("**all**", c.all);
    return md;
}

}  // namespace

std::string final_summary_md(const final_summary_input& in) {
    const eval::ab_evaluation* ab = in.ab;
    const int best = in.best;
    const auto& records = *in.records;
    const auto& base_rec = records.front();
    const auto& best_rec = records[static_cast<std::size_t>(best)];
    std::string md = fmt::format("# Final summary — {}\n\n**Promotion verdict: {}**\n\n", in.op, in.verdict);
    for (const auto& line : in.criteria) md += "- " + line + "\n";
    md += fmt::format("\nBest version: {} ({})\n", version_label(best), in.eligibility_rule);

    md += "\n## Final claim\n\n";
    if (ab) {
        md += fmt::format("Measured by this `kloop report` run: v0 and {} gated, then timed interleaved in one runner process "
                          "(same inputs, same cache flush). Times in ms.\n\n",
                          version_label(best));
        md += "| mode/shape | version | n | median | mean | std | min | p10 | p90 | speedup | 95% CI | verdict |\n"
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
        for (const auto& s : ab->shapes) {
            if (!s.ok || !s.base_s || !s.candidate_s || !s.verdict) {
                md += fmt::format("| {}/{} | — | | | | | | | | | | {} |\n", s.mode, s.shape, md_cell("not timed: " + s.error));
                continue;
            }
            md += fmt::format("| {}/{} | v0 | {} | | | |\n", s.mode, s.shape, stats_cells(*s.base_s));
            md += fmt::format("| {}/{} | {} | {} | x{:.3f} | [{:.3f}, {:.3f}] | {} |\n", s.mode, s.shape, version_label(best),
                              stats_cells(*s.candidate_s), s.verdict->speedup, s.verdict->ci_low, s.verdict->ci_high,
                              measure::to_string(s.verdict->verdict));
        }
        if (ab->overall)
            md += fmt::format("\n**Equal-weight geomean speedup over {} shapes: x{:.3f}, 95% CI [{:.3f}, {:.3f}], {}** (noise margin "
                              "{:.0f}%, {} bootstrap resamples)\n",
                              ab->shapes.size(), ab->overall->speedup, ab->overall->ci_low, ab->overall->ci_high,
                              measure::to_string(ab->overall->verdict), ab->config.min_effect * 100, ab->config.resamples);
    } else {
        md += "No candidate beat v0; the baseline's own numbers (ms, from `kloop init`):\n\n"
              "| mode/shape | n | median | mean | std | min | p10 | p90 |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n";
        for (const auto& b : base_rec.bench) md += fmt::format("| {}/{} | {} |\n", b.mode, b.shape, stats_cells(b.s));
    }
    md += fmt::format("\n- **Baseline**: v0 = `{}` sha256 {}{}; repository commit {}{}\n", base_rec.candidate_source,
                      base_rec.candidate_sha256, local_files_note(base_rec), in.baseline_commit.empty() ? "(not in git)" : in.baseline_commit,
                      in.baseline_dirty ? " (dirty)" : "");
    md += fmt::format("- **Candidate**: {} = `iter_{}/{}` sha256 {}{}; commit {}\n", version_label(best), version_label(best),
                      best_rec.candidate_file, best_rec.candidate_sha256, local_files_note(best_rec),
                      best_rec.git.committed ? best_rec.git.commit : (best_rec.git.commit.empty() ? "(none)" : best_rec.git.commit));
    md += "- **Machine**: " + in.machine + "\n";
    md += "- **Commands**:\n";
    for (const auto& [command, note] : in.commands)
        md += note.empty() ? fmt::format("  - `{}`\n", command) : fmt::format("  - `{}`  ({})\n", command, note);

    md += "\n## Iterations\n\n| Iter | Status | Direction | Predicted | vs best at the time |\n| --- | --- | --- | --- | --- |\n";
    for (const auto& r : records) {
        std::string vs = r.number == 0 ? "baseline"
                         : r.overall  ? fmt::format("x{:.3f} [{:.3f}, {:.3f}] {} vs {}", r.overall->speedup, r.overall->ci_low,
                                                   r.overall->ci_high, measure::to_string(r.overall->verdict), version_label(r.vs_best))
                                      : "not timed";
        md += fmt::format("| {} | {} | {} | {} | {} |\n", version_label(r.number), to_string(r.status), md_cell(r.number == 0 ? "the kernel as found" : r.direction),
                          md_cell(r.number == 0 ? "—" : detail::predicted_cell(r)), md_cell(vs));
    }
    md += "\n## Rejected versions\n\n";
    bool any = false;
    for (const auto& r : records)
        if (r.status == iteration_status::rejected) {
            md += fmt::format("- {} ({}): {}\n", version_label(r.number), to_string(r.rejection), r.reason);
            any = true;
        }
    if (!any) md += "None.\n";

    if (in.calibration) md += calibration_md(*in.calibration);

    md += "\n## Strategy memory\n\n";
    md += fmt::format("Key: {}.\n\n", in.memory_key);
    std::string preferred, blocked, open;
    for (const auto& f : in.memory) {
        const auto line = fmt::format("- `{}` ({}): {} positive, {} negative, {} rejected, {} loop(s)\n", f.fingerprint,
                                      fmt::join(f.tags, ", "), f.positive, f.negative, f.rejected, f.runs);
        if (f.where == memory_line::standing::blocked) blocked += line;
        else if (f.where == memory_line::standing::preferred) preferred += line;
        else open += line;
    }
    md += "**Preferred** (helped):\n" + (preferred.empty() ? "- none\n" : preferred);
    md += "\n**Blocked** (rejected, or negative twice — do not retry without a new reason):\n" + (blocked.empty() ? "- none\n" : blocked);
    md += "\n**Tried once, not better** (one more negative blocks them):\n" + (open.empty() ? "- none\n" : open);

    return md;
}

}  // namespace kloop::report
