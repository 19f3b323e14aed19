// kloop report: iteration_summary.md (see iteration_summary.hpp).
#include "report/iteration_summary.hpp"

#include <fmt/format.h>

#include "report/detail/markdown.hpp"
#include "report/detail/prediction_text.hpp"

namespace kloop::report {

using namespace kloop::loop;

using detail::md_cell;
using detail::measured_text;
using detail::ms;

std::string iteration_summary_md(const iteration_record& r, const std::string& op) {
    std::string out = fmt::format("# {} {} — {}\n\n", op, version_label(r.number), to_string(r.status));
    if (r.status == iteration_status::rejected) out += fmt::format("**Rejected ({})**: {}\n\n", to_string(r.rejection), r.reason);
    else if (!r.reason.empty()) out += fmt::format("**Verdict**: {}\n\n", r.reason);
    out += fmt::format("- Candidate: `{}` (copy: `{}`, sha256 {})\n", r.candidate_source, r.candidate_file, r.candidate_sha256);
    if (!r.local_files.empty()) {
        out += "- Local files, copied beside it:";
        for (const auto& f : r.local_files) out += fmt::format(" `{}`", f);
        out += fmt::format(" (sources sha256 {})\n", r.sources_sha256);
    }
    if (r.number > 0) {
        out += fmt::format("- Direction: {}\n- Predicted: {}\n", r.direction, r.expected);
        out += "- Measured: ";
        if (r.overall)
            out += fmt::format("x{:.3f} geomean vs {} (95% CI [{:.3f}, {:.3f}], {}; noise margin {:.0f}%)\n", r.overall->speedup,
                               version_label(r.vs_best), r.overall->ci_low, r.overall->ci_high,
                               measure::to_string(r.overall->verdict), r.min_effect * 100);
        else
            out += "not timed\n";
        std::string tags;
        for (const auto& t : r.tags) tags += (tags.empty() ? "" : ", ") + t;
        out += fmt::format("- Strategy tags: {} (fingerprint {})\n", tags, r.fingerprint);
        if (!r.blocked_override.empty()) out += fmt::format("- Blocked override: {}\n", r.blocked_override);
    }
    if (!r.device.empty()) out += fmt::format("- Device: {}\n", r.device);
    out += fmt::format("- Gate: {}\n", r.gate_pass ? (r.gate_partial ? "green (partial)" : "green (full)") : "red");
    out += fmt::format("- Git: {}\n", r.git.committed ? "committed " + r.git.commit : (r.git.in_repo ? "not committed: " : "") + r.git.note);
    out += fmt::format("- Profile: {} — {}\n", r.profile_status, r.profile_note);
    for (const auto& w : r.warnings) out += fmt::format("- **Warning**: {}\n", w);
    if (!r.predictions.empty()) {
        out += fmt::format("\n## Predictions ({})\n\n", predictions_brief(r.predictions));
        out += "| line | claim | outcome | measured | off by | note |\n| --- | --- | --- | --- | --- | --- |\n";
        for (const auto& p : r.predictions)
            out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", p.claim.line, md_cell(p.claim.text), to_string(p.score.outcome),
                               measured_text(p), p.score.off_by ? fmt::format("x{:.3f}", *p.score.off_by) : "—",
                               md_cell(p.score.reason));
    }
    if (!r.ab.empty()) {
        out += fmt::format("\n## A/B vs {} (interleaved, one runner)\n\n", version_label(r.vs_best));
        out += "| mode/shape | best median ms | candidate median ms | speedup | 95% CI | verdict |\n| --- | --- | --- | --- | --- | --- |\n";
        for (const auto& c : r.ab) {
            if (!c.ok || !c.verdict || !c.best_s || !c.candidate_s) {
                out += fmt::format("| {}/{} | — | — | — | — | {} |\n", c.mode, c.shape, md_cell("not timed: " + c.error));
                continue;
            }
            out += fmt::format("| {}/{} | {} | {} | x{:.3f} | [{:.3f}, {:.3f}] | {} |\n", c.mode, c.shape, ms(c.best_s->median),
                               ms(c.candidate_s->median), c.verdict->speedup, c.verdict->ci_low, c.verdict->ci_high,
                               measure::to_string(c.verdict->verdict));
        }
    } else if (!r.bench.empty()) {
        out += "\n## Bench\n\n| mode/shape | n | median ms | mean ms | std ms | min ms | p10 ms | p90 ms |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n";
        for (const auto& b : r.bench)
            out += fmt::format("| {}/{} | {} | {} | {} | {} | {} | {} | {} |\n", b.mode, b.shape, b.s.n, ms(b.s.median), ms(b.s.mean),
                               ms(b.s.stdev), ms(b.s.min), ms(b.s.p10), ms(b.s.p90));
    }
    out += "\nFull record: `benchmark_result.json` (evaluation, A/B with raw samples).\n";
    return out;
}

}  // namespace kloop::report
