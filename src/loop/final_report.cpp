// kloop loop: `kloop report` (see final_report.hpp).
#include "loop/final_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "loop/contract.hpp"
#include "loop/detail/markdown.hpp"
#include "loop/fault_point.hpp"
#include "loop/loop_session.hpp"
#include "loop/ranking.hpp"
#include "platform/file_io.hpp"
#include "platform/host_info.hpp"
#include "platform/paths.hpp"
#include "report/ab_json.hpp"
#include "report/evaluation_json.hpp"
#include "report/evaluation_text.hpp"

namespace kloop::loop {

namespace fs = std::filesystem;
using detail::md_cell;
using detail::ms;
using nlohmann::json;

promotion decide_promotion(int best, const std::optional<eval::ab_evaluation>& ab, std::optional<double> target_speedup,
                           const profile_evidence& profile) {
    promotion p;
    p.best = best;
    if (best == 0 || !ab) {
        p.verdict = "NO PROMOTION: no version beat the baseline v0 in the loop (the best eligible version is v0)";
        p.criteria.push_back("[ ] a candidate better than v0: none");
        return p;
    }
    const bool gate = ab->candidate.status == eval::disposition::passed && ab->candidate.gate.pass && !ab->candidate.gate.partial;
    const bool base_gate = ab->base.status == eval::disposition::passed;
    const bool faster = ab->ok && ab->overall && ab->overall->verdict == measure::ab_verdict::faster;
    p.criteria.push_back(fmt::format("[{}] full green gate for {} in this run{}", gate ? "x" : " ", version_label(best),
                                     gate ? "" : ": " + ab->candidate.reason));
    if (!base_gate) p.criteria.push_back("[ ] the baseline v0 passed its gate in this run: " + ab->base.reason);
    if (ab->overall)
        p.criteria.push_back(fmt::format("[{}] a repeatable win: {} vs v0 side by side x{:.3f} [{:.3f}, {:.3f}] {}", faster ? "x" : " ",
                                         version_label(best), ab->overall->speedup, ab->overall->ci_low, ab->overall->ci_high,
                                         measure::to_string(ab->overall->verdict)));
    else
        p.criteria.push_back("[ ] a repeatable win: the side-by-side A/B did not complete: " + ab->reason);
    if (target_speedup && ab->overall)
        p.criteria.push_back(fmt::format("[{}] target x{:.2f} (informative, not required to promote): measured x{:.3f}",
                                         ab->overall->speedup >= *target_speedup ? "x" : " ", *target_speedup, ab->overall->speedup));
    const bool profiled = profile.status == "full" || profile.status == "n/a";
    if (profile.status == "n/a")
        p.criteria.push_back("[x] profile evidence: not applicable (not a CUDA op; Nsight Compute profiles CUDA kernels)");
    else if (profiled)
        p.criteria.push_back(fmt::format("[x] full Nsight Compute profile of {}: {}", version_label(best), profile.note));
    else
        p.criteria.push_back(fmt::format("[{}] full Nsight Compute profile of {}: {} ({}){}", profile.allow_unprofiled ? "~" : " ",
                                         version_label(best), profile.status, profile.note,
                                         profile.allow_unprofiled ? " — WAIVED by --allow-unprofiled: the win is not explained by a profile"
                                                                  : ""));
    p.promote = gate && base_gate && faster && (profiled || profile.allow_unprofiled);
    p.verdict = p.promote ? fmt::format("PROMOTE {} — a full green gate and a repeatable win over v0{}", version_label(best),
                                        profiled ? ", explained by its profile" : " (UNPROFILED: --allow-unprofiled)")
                          : fmt::format("NO PROMOTION of {}: {}", version_label(best),
                                        !gate        ? "its gate is not green"
                                        : !base_gate ? "the baseline failed its gate"
                                        : !faster    ? "not FASTER than v0 side by side"
                                                     : "no full profile (pass --allow-unprofiled to promote without one)");
    return p;
}

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

std::string command_of(const fs::path& record_file) {
    try {
        const auto j = json::parse(platform::read_file(record_file));
        std::vector<std::string> argv = j.value("command_line", std::vector<std::string>{});
        std::string s;
        for (const auto& a : argv) s += (s.empty() ? "" : " ") + (a.find(' ') != std::string::npos ? "'" + a + "'" : a);
        return s;
    } catch (...) {
        return "(unreadable)";
    }
}

std::string join_args(const std::vector<std::string>& argv) {
    std::string s;
    for (const auto& a : argv) s += (s.empty() ? "" : " ") + (a.find(' ') != std::string::npos ? "'" + a + "'" : a);
    return s;
}

}  // namespace

report_outcome write_final_report(const report_request& req, platform::command_runner_base& runner) {
    report_outcome out;
    auto session = open_session(req.workspace, access::write, record_origin{req.command_line, {}});
    const auto& c = session.c;
    session.origin.repo = platform::git_state_of(c.candidate.parent_path(), runner);
    strategy_memory memory(req.memory_db);
    reconcile_memory(session, memory);
    const auto policy = promotion_policy(req.allow_unprofiled);
    const auto ranked = rank_versions(session.records, policy);
    const int best = ranked.empty() ? 0 : ranked.front().number;
    const auto& base_rec = session.baseline();
    const auto& best_rec = session.records[static_cast<std::size_t>(best)];

    std::optional<eval::ab_evaluation> ab;
    if (best != 0) {
        const auto spec = load_spec(c);
        platform::scoped_temp_dir scratch("kloop-report");
        const eval::ab_context ctx{spec,   session.ws.iteration_dir(0) / base_rec.candidate_file,
                                   session.ws.iteration_dir(best) / best_rec.candidate_file,
                                   contract_options(c, req.options), req.ab, runner, platform::cache_dir(), scratch.path()};
        ab = eval::compare_candidates(ctx);
        ab->base_label = "v0";
        ab->candidate_label = version_label(best);
        ab->command_line = req.command_line;
    }
    out.verdict = decide_promotion(best, ab, c.target_speedup,
                                   {best_rec.profile_status, best_rec.profile_note, req.allow_unprofiled});
    if (ranked.empty())
        for (const auto& r : session.records)
            out.verdict.criteria.push_back(fmt::format("[ ] {} not eligible: {}", version_label(r.number), ineligibility(r, policy)));
    fault_point("report.compared");

    std::string md = fmt::format("# Final summary — {}\n\n**Promotion verdict: {}**\n\n", c.op, out.verdict.verdict);
    for (const auto& line : out.verdict.criteria) md += "- " + line + "\n";
    md += fmt::format("\nBest version: {} ({})\n", version_label(best), eligibility_rule_text(policy));

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
                      base_rec.candidate_sha256, local_files_note(base_rec), c.baseline_git_commit.empty() ? "(not in git)" : c.baseline_git_commit,
                      c.baseline_git_dirty ? " (dirty)" : "");
    md += fmt::format("- **Candidate**: {} = `iter_{}/{}` sha256 {}{}; commit {}\n", version_label(best), version_label(best),
                      best_rec.candidate_file, best_rec.candidate_sha256, local_files_note(best_rec),
                      best_rec.git.committed ? best_rec.git.commit : (best_rec.git.commit.empty() ? "(none)" : best_rec.git.commit));
    if (ab) md += "- **Machine**: " + report::environment_line(ab->candidate.env) + "\n";
    else md += fmt::format("- **Machine**: {} ({} logical CPUs)\n", platform::cpu_model(), platform::logical_cpus());
    md += "- **Commands**:\n";
    md += fmt::format("  - `{}`\n", command_of(session.ws.contract_file()));
    for (const auto& r : session.records)
        if (r.number > 0) md += fmt::format("  - `{}`  ({})\n", command_of(session.ws.iteration_dir(r.number) / "benchmark_result.json"), version_label(r.number));
    md += fmt::format("  - `{}`  (this report)\n", join_args(req.command_line));

    md += "\n## Iterations\n\n| Iter | Status | Direction | Predicted | vs best at the time |\n| --- | --- | --- | --- | --- |\n";
    for (const auto& r : session.records) {
        std::string vs = r.number == 0 ? "baseline"
                         : r.overall  ? fmt::format("x{:.3f} [{:.3f}, {:.3f}] {} vs {}", r.overall->speedup, r.overall->ci_low,
                                                   r.overall->ci_high, measure::to_string(r.overall->verdict), version_label(r.vs_best))
                                      : "not timed";
        md += fmt::format("| {} | {} | {} | {} | {} |\n", version_label(r.number), to_string(r.status), md_cell(r.number == 0 ? "the kernel as found" : r.direction),
                          md_cell(r.number == 0 ? "—" : r.expected), md_cell(vs));
    }
    md += "\n## Rejected versions\n\n";
    bool any = false;
    for (const auto& r : session.records)
        if (r.status == iteration_status::rejected) {
            md += fmt::format("- {} ({}): {}\n", version_label(r.number), to_string(r.rejection), r.reason);
            any = true;
        }
    if (!any) md += "None.\n";

    md += "\n## Strategy memory\n\n";
    md += fmt::format("Key: op `{}`, backend `{}`, device `{}`, shape set `{}` (database `{}`).\n\n", c.op, c.backend, c.device,
                      c.shape_set, req.memory_db.string());
    const auto fps = memory.summarise(session.key());
    std::string preferred, blocked, open;
    for (const auto& f : fps) {
        const auto line = fmt::format("- `{}` ({}): {} positive, {} negative, {} rejected, {} loop(s)\n", f.fingerprint,
                                      fmt::join(f.tags, ", "), f.positive, f.negative, f.rejected, f.runs);
        if (f.is_blocked()) blocked += line;
        else if (f.is_preferred()) preferred += line;
        else open += line;
    }
    md += "**Preferred** (helped):\n" + (preferred.empty() ? "- none\n" : preferred);
    md += "\n**Blocked** (rejected, or negative twice — do not retry without a new reason):\n" + (blocked.empty() ? "- none\n" : blocked);
    md += "\n**Tried once, not better** (one more negative blocks them):\n" + (open.empty() ? "- none\n" : open);

    json body = {{"verdict", {{"promote", out.verdict.promote}, {"best", out.verdict.best}, {"text", out.verdict.verdict},
                              {"criteria", out.verdict.criteria}}},
                 {"ab", ab ? report::to_json(*ab) : json(nullptr)}};
    write_record(session.ws.final_result_file(), "kloop.final_result", body, session.origin);
    platform::write_file_atomic(session.ws.final_summary_file(), md);
    write_manifest(session, req.memory_db);
    out.summary_file = session.ws.final_summary_file();
    out.summary = md;
    return out;
}

}  // namespace kloop::loop
