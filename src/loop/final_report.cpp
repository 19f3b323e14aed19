// kloop loop: `kloop report` (see final_report.hpp).
#include "loop/final_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "loop/record/contract.hpp"
#include "loop/record/proposer_calibration.hpp"
#include "loop/fault_point.hpp"
#include "loop/loop_session.hpp"
#include "loop/ranking.hpp"
#include "loop/report_page.hpp"
#include "platform/file_io.hpp"
#include "platform/host_info.hpp"
#include "platform/paths.hpp"
#include "platform/utc_time.hpp"
#include "report/ab_json.hpp"
#include "report/evaluation_json.hpp"
#include "report/evaluation_text.hpp"
#include "report/final_summary.hpp"

namespace kloop::loop {

namespace fs = std::filesystem;
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
        p.criteria.push_back("[x] profile evidence: not applicable (the op does not run on the GPU; Nsight Compute profiles GPU kernels)");
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

    report::final_summary_input in;
    in.op = c.op;
    in.verdict = out.verdict.verdict;
    in.criteria = out.verdict.criteria;
    in.best = best;
    in.eligibility_rule = eligibility_rule_text(policy);
    in.ab = ab ? &*ab : nullptr;
    in.records = &session.records;
    in.baseline_commit = c.baseline_git_commit;
    in.baseline_dirty = c.baseline_git_dirty;
    in.machine = ab ? report::environment_line(ab->candidate.env)
                    : fmt::format("{} ({} logical CPUs)", platform::cpu_model(), platform::logical_cpus());
    in.commands.emplace_back(command_of(session.ws.contract_file()), "");
    for (const auto& r : session.records)
        if (r.number > 0)
            in.commands.emplace_back(command_of(session.ws.iteration_dir(r.number) / "benchmark_result.json"), version_label(r.number));
    in.commands.emplace_back(join_args(req.command_line), "this report");
    in.memory_key = fmt::format("op `{}`, backend `{}`, device `{}`, shape set `{}` (database `{}`)", c.op, c.backend, c.device,
                                c.shape_set, req.memory_db.string());
    for (const auto& f : memory.summarise(session.key())) {
        using standing = report::memory_line::standing;
        in.memory.push_back({f.fingerprint, f.tags, f.positive, f.negative, f.rejected, f.runs,
                             f.is_blocked() ? standing::blocked : f.is_preferred() ? standing::preferred : standing::open});
    }
    const auto calibration = calibrate(session.records);
    in.calibration = &calibration;
    const std::string md = report::final_summary_md(in);

    json body = {{"verdict", {{"promote", out.verdict.promote}, {"best", out.verdict.best}, {"text", out.verdict.verdict},
                              {"criteria", out.verdict.criteria}}},
                 {"proposer_calibration", to_json(calibration)},
                 {"ab", ab ? report::to_json(*ab) : json(nullptr)}};
    write_record(session.ws.final_result_file(), "kloop.final_result", body, session.origin);
    platform::write_file_atomic(session.ws.final_summary_file(), md);
    if (req.html) {
        report::html_final_claim claim;
        claim.written_at = platform::utc_now_iso8601();
        claim.command_line = req.command_line;
        claim.promote = out.verdict.promote;
        claim.best = best;
        claim.verdict = out.verdict.verdict;
        claim.criteria = out.verdict.criteria;
        claim.ab = ab;
        const auto page = session.ws.report_page_file();
        platform::write_file_atomic(page, report::html_report(gather_report_page(session, page, std::move(claim), req.command_line)));
        out.page_file = page;
    }
    write_manifest(session, req.memory_db);
    out.summary_file = session.ws.final_summary_file();
    out.summary = md;
    return out;
}

}  // namespace kloop::loop
