// kloop report: the table of a `kloop tune` (see tune_table.hpp).
#include "report/tune_table.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/detail/markdown.hpp"

namespace kloop::report {

namespace {

std::string gate_text(loop::tune_point_status s) {
    switch (s) {
        case loop::tune_point_status::faster:
        case loop::tune_point_status::not_faster: return "green";
        case loop::tune_point_status::red: return "red";
        case loop::tune_point_status::build_failed: return "build failed";
        case loop::tune_point_status::duplicate: return "skipped (duplicate)";
        case loop::tune_point_status::start: return "green (as the incumbent)";
    }
    return "";
}

}  // namespace

std::string speedup_text(const measure::ab_result& v) {
    return fmt::format("x{:.3f} [{:.3f}, {:.3f}]", v.speedup, v.ci_low, v.ci_high);
}

std::string tune_points_table(const loop::tune_result& r) {
    const bool devices = !r.devices.empty() || r.engine == "slurm";  // a column says where each raced
    std::string s = devices ? "| # | configuration | gate | vs incumbent | speedup [95% CI] | verdict | device | note |\n"
                              "| --- | --- | --- | --- | --- | --- | --- | --- |\n"
                            : "| # | configuration | gate | vs incumbent | speedup [95% CI] | verdict | note |\n"
                              "| --- | --- | --- | --- | --- | --- | --- |\n";
    for (const auto& p : r.points) {
        const bool is_start = p.status == loop::tune_point_status::start;
        std::string verdict = is_start ? "start" : p.verdict ? measure::to_string(p.verdict->verdict) : "—";
        if (!is_start && p.became_incumbent) verdict += " → incumbent";
        s += fmt::format("| {} | {} | {} | {} | {} | {} |{} {} |\n", p.index, detail::md_cell(p.label),
                         gate_text(p.status), detail::md_cell(is_start ? "" : p.incumbent),
                         p.verdict ? speedup_text(*p.verdict) : "—", verdict,
                         devices ? " " + detail::md_cell(p.device.empty() ? "—" : p.device) + " |" : "",
                         detail::md_cell(p.reason));
    }
    return s;
}

std::string tune_page_md(const loop::tune_result& r, const tune_page_context& ctx) {
    std::string s = fmt::format("# kloop tune: {} {}\n\n", ctx.op, ctx.iteration);
    s += fmt::format("- candidate: `{}`\n", ctx.candidate);
    s += fmt::format("- search: {} over {} — {} of {} points visited (budget {}); {}\n", r.search,
                     fmt::format("{}", fmt::join(r.names, ", ")), r.points.size(), r.space_size, r.budget,
                     r.stop_reason);
    s += fmt::format("- start: {}\n", r.start_label);
    if (r.interrupted) s += "- interrupted: the points below were recorded; no iteration was submitted\n";
    else if (r.best == r.start) s += "- chose: the start (no point was FASTER than it)\n";
    else
        s += fmt::format("- chose: {}{}\n", r.best_label,
                         r.best_vs_start ? " — " + speedup_text(*r.best_vs_start) + " " +
                                               measure::to_string(r.best_vs_start->verdict) + " vs the start"
                                         : "");
    if (!ctx.outcome.empty()) s += fmt::format("- iteration {}: {}\n", ctx.iteration, ctx.outcome);
    if (r.engine == "slurm")
        s += fmt::format("- engine: Slurm — a batch of up to {} points raced at once against one incumbent, each a task "
                         "of the batch's job array; the incumbent moved to the batch's FASTER point with the largest "
                         "speedup\n",
                         r.batch);
    else if (!r.devices.empty())
        s += fmt::format("- devices: {} — a batch of up to {} points raced at once against one incumbent, one race per "
                         "device; the incumbent moved to the batch's FASTER point with the largest speedup\n",
                         fmt::join(r.devices, ", "), r.devices.size());
    s += "\nEach point was built and gated, then timed interleaved against the incumbent of its time "
         "(`eval::compare_candidates`); only a FASTER verdict moved the incumbent.\n\n";
    s += tune_points_table(r);
    return s;
}

}  // namespace kloop::report
