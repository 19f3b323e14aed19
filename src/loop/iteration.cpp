// kloop loop: one iteration (see iteration.hpp).
#include "loop/iteration.hpp"

#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/local_sources.hpp"
#include "core/error.hpp"
#include "eval/evaluator.hpp"
#include "loop/record/classification.hpp"
#include "loop/record/contract.hpp"
#include "loop/evaluation_marker.hpp"
#include "loop/fault_point.hpp"
#include "loop/fingerprint.hpp"
#include "report/iteration_summary.hpp"
#include "loop/loop_session.hpp"
#include "report/opt_log.hpp"
#include "loop/proposal.hpp"
#include "loop/proposal_admission.hpp"
#include "loop/ranking.hpp"
#include "loop/repo_git.hpp"
#include "loop/strategy_memory.hpp"
#include "loop/version_profile.hpp"
#include "platform/file_io.hpp"
#include "platform/host_info.hpp"
#include "platform/paths.hpp"
#include "platform/sha256.hpp"
#include "report/ab_json.hpp"
#include "report/evaluation_json.hpp"
#include "platform/utc_time.hpp"

namespace kloop::loop {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The footer of the staged proposal copy: the claims as kloop parsed them, before the A/B.
std::string registered_predictions_md(const std::vector<scored_prediction>& ps) {
    if (ps.empty()) return "";
    std::string out = "\n\n## Registered predictions (parsed by kloop before the measurement)\n\n";
    for (const auto& p : ps) {
        std::string range;
        if (p.claim.kind != prediction_kind::no_change)
            range = fmt::format(" in [{}, {}]", p.claim.low ? fmt::format("{:g}", *p.claim.low) : std::string("-inf"),
                                p.claim.high ? fmt::format("{:g}", *p.claim.high) : std::string("inf"));
        const std::string what = p.claim.kind == prediction_kind::profile ? "profile " + p.claim.metric : to_string(p.claim.kind);
        out += fmt::format("- line {}: {} {}{}\n", p.claim.line, p.claim.scope.empty() ? std::string("overall") : p.claim.scope,
                           what, range);
    }
    return out;
}

}  // namespace

void refuse_past_cap(const loop_session& session, int staged) {
    const int done = static_cast<int>(session.records.size()) - 1 + staged;
    if (done >= session.c.max_iterations)
        throw usage_error(fmt::format("the iteration cap ({}) is reached: {} iterations are recorded. Run `kloop report` "
                                      "for the verdict; a longer loop needs a new `kloop init` with a higher "
                                      "--max-iterations",
                                      session.c.max_iterations, done));
}

staged_iteration stage_iteration(loop_session& session, strategy_memory& memory, const iterate_request& req, int number,
                                 platform::command_runner_base& runner) {
    staged_iteration it;
    const auto& c = session.c;
    const fs::path candidate = fs::absolute(req.candidate.value_or(c.candidate)).lexically_normal();
    if (!fs::is_regular_file(candidate)) throw usage_error("option --candidate '" + candidate.string() + "': no such file");
    if (!fs::is_regular_file(req.proposal)) throw usage_error("option --proposal '" + req.proposal.string() + "': no such file");
    const auto prop = read_proposal(req.proposal);
    session.origin.repo = platform::git_state_of(req.commit_as.value_or(candidate).parent_path(), runner);

    iteration_record& r = it.record;
    r.number = number;
    r.candidate_source = candidate.string();
    r.candidate_file = candidate.filename().string();
    r.direction = prop.direction;
    r.expected = prop.expected;
    r.tags = prop.tags;
    r.fingerprint = fingerprint_of(c.backend, prop.tags);
    r.blocked_override = prop.blocked_override;
    // Admitted or refused before anything is staged or measured.
    r.warnings = admit_proposal(prop, req.proposal.string(), r.fingerprint, memory.lookup(session.key(), r.fingerprint),
                                {req.require_prediction, req.enforce_blocked});
    // Pre-registered: the claims are in the record (and the evaluation mark) before the A/B.
    for (const auto& claim : prop.predictions) r.predictions.push_back({claim, {prediction_outcome::unscored, {}, {}, "not measured yet"}});

    // The best to beat, and the snapshot: what is measured is what is recorded.
    const auto best = best_version(session.records, ab_target_policy());
    if (!best) throw internal_error("no eligible version, not even the baseline");
    r.vs_best = *best;
    const auto& best_rec = session.records[static_cast<std::size_t>(*best)];
    it.best_source = session.ws.iteration_dir(*best) / best_rec.candidate_file;
    it.candidate = candidate;
    it.spec = std::make_shared<spec::op_spec>(load_spec(c));
    // The candidate with the local headers or modules it uses, at the same relative paths: what
    // is built is what is snapshotted and committed.
    it.sources = eval::candidate_sources(*it.spec, candidate);
    it.staging = session.ws.make_staging_dir(version_label(r.number));
    backend::copy_local_sources(it.sources, it.staging);
    platform::write_file_atomic(it.staging / "optimization_proposal.md", prop.text + registered_predictions_md(r.predictions));
    r.candidate_sha256 = platform::sha256_file(it.staging / r.candidate_file);
    for (std::size_t k = 1; k < it.sources.files.size(); ++k) r.local_files.push_back(it.sources.files[k].generic_string());
    r.sources_sha256 = backend::local_sources_sha256(it.sources);
    fault_point("iterate.staged");
    return it;
}

void evaluate_staged(staged_iteration& it, const contract& c, const fs::path& state_dir, const iterate_request& req,
                     platform::command_runner_base& runner, const std::string& device) {
    iteration_record& r = it.record;
    r.device = device;
    platform::scoped_temp_dir scratch("kloop-iterate");
    eval::ab_context ctx{*it.spec, it.best_source, it.staging / r.candidate_file, contract_options(c, req.options), req.ab,
                         runner, platform::cache_dir(), scratch.path()};
    // Black-box ops: stable copy paths, and the base's green gate reused on byte-identical inputs.
    ctx.state_dir = state_dir;
    ctx.reuse_base_gate = true;
    // A proposal in the repository is not the base's bytes (a Slurm sibling's task names none).
    if (!req.proposal.empty()) ctx.leave_out = {fs::absolute(req.proposal)};
    // From here until the verdict the candidate runs: a kloop that dies meanwhile leaves the mark,
    // and the next command records this candidate as rejected (loop/evaluation_marker).
    auto marker = std::make_unique<evaluation_marker>(it.staging, r);
    auto ab = eval::compare_candidates(ctx);
    ab.base_label = version_label(r.vs_best);
    ab.candidate_label = it.candidate.string();
    ab.command_line = req.command_line;
    ab.candidate.candidate = it.candidate.string();
    ab.candidate.command_line = req.command_line;
    ab.device = device;
    // Black-box ops: say what was reused and how the sides were timed when it was not in one process.
    if (const auto& repo = ab.base.repository; repo && !repo->gate.empty() && repo->gate.front().reused)
        it.notes.push_back(fmt::format("the base's gate was reused: green on the same repository bytes, command and "
                                       "environment at {} ({:.1f} s saved)",
                                       repo->gate.front().reused->ran_at, repo->gate.front().reused->wall_s));
    if (const auto& repo = ab.candidate.repository; repo && !repo->ab_timing_fallback.empty())
        it.notes.push_back("the sides were timed in separate processes: " + repo->ab_timing_fallback);
    auto cls = classify(ab, version_label(r.vs_best));
    // Black-box evaluations carry no isolation facts: their contract is the repository's own tests
    // (docs/blackbox.md, docs/security.md).
    if (cls.status == iteration_status::positive && ab.candidate.isolation.is_object() && !ab.candidate.is_confined() &&
        !req.allow_unconfined) {
        cls.status = iteration_status::rejected;
        cls.kind = rejection_kind::integrity;
        cls.reason = "not promoted: " + cls.reason + ", but the candidate ran unconfined (" +
                     ab.candidate.isolation.value("detail", std::string("see its isolation check")) +
                     "); --allow-unconfined promotes it";
    }
    if (cls.status == iteration_status::positive && req.require_quiet && ab.host_load.busy()) {
        cls.status = iteration_status::rejected;
        cls.kind = rejection_kind::bench;
        cls.reason = "not promoted: " + cls.reason + ", but the machine was busy while it was timed (" +
                     ab.host_load.describe() + "); --require-quiet promotes only verdicts from a quiet machine";
    }
    marker.reset();
    fault_point("iterate.compared");

    r.status = cls.status;
    r.rejection = cls.kind;
    r.reason = cls.reason;
    r.overall = cls.overall;
    r.min_effect = req.ab.min_effect;
    r.gate_pass = ab.candidate.gate.pass && ab.candidate.status == eval::disposition::passed;
    r.gate_partial = ab.candidate.gate.partial;
    r.ab = comparisons_of(ab);
    r.bench = candidate_stats_of(ab);
    r.bench_ok = r.status != iteration_status::rejected && ab.ok && !r.bench.empty();
    // The profile step: ncu captures into the iteration's folder; may mark the candidate suspect.
    // The candidate runs again, under the same mark.
    marker = std::make_unique<evaluation_marker>(it.staging, r);
    if (auto note = profile_version(r, *it.spec, it.staging / r.candidate_file, ab.candidate.census_kernels, it.staging,
                                    contract_options(c, req.options), req.profile, runner);
        !note.empty())
        it.notes.push_back(note);
    marker.reset();
    fault_point("iterate.profiled");
    score_predictions(r);
    it.evaluation = report::to_json(ab.candidate);
    it.ab = report::to_json(ab);
}

iterate_outcome record_staged(loop_session& session, strategy_memory& memory, staged_iteration& it,
                              const iterate_request& req, platform::command_runner_base& runner) {
    iterate_outcome out;
    out.notes = std::move(it.notes);
    const auto& c = session.c;
    iteration_record& r = it.record;
    r.recorded_at = platform::utc_now_iso8601();
    if (req.commit_as) {
        // Evaluated from a copy: its bytes are committed as the kernel file, which is left alone.
        r.git = commit_snapshot(*req.commit_as, it.staging / r.candidate_file, commit_message(c.op, r), runner,
                                r.local_files);
    } else {
        std::vector<fs::path> local_paths;
        for (const auto& f : r.local_files) local_paths.push_back(it.sources.root / f);
        r.git = commit_candidate(it.candidate, commit_message(c.op, r), runner, local_paths);
    }
    if (!r.git.repair.empty()) out.notes.push_back("git: " + r.git.repair);
    if (!r.git.committed) out.notes.push_back("git: " + r.git.note);
    fault_point("iterate.committed");

    json body = {{"iteration", to_json(r)}, {"evaluation", std::move(it.evaluation)}, {"ab", std::move(it.ab)}};
    write_record(it.staging / "benchmark_result.json", "kloop.iteration", body, session.origin);
    platform::write_file_atomic(it.staging / "iteration_summary.md", report::iteration_summary_md(r, c.op));
    fault_point("iterate.written");
    out.dir = session.ws.iteration_dir(r.number);
    fs::rename(it.staging, out.dir);  // the commit point: the iteration exists from here on
    fault_point("iterate.renamed");

    session.records.push_back(r);
    const std::string log = fs::exists(session.ws.opt_log_file()) ? platform::read_file(session.ws.opt_log_file()) : "";
    platform::write_file_atomic(session.ws.opt_log_file(), report::append_missing_rows(log, session.records));
    fault_point("iterate.logged");
    memory.record(memory_row_of(session, r));
    fault_point("iterate.remembered");
    write_manifest(session, req.memory_db);
    out.record = r;
    out.status = compute_status(session.records, c.max_iterations, c.target_speedup);
    return out;
}

iterate_outcome run_iteration(const iterate_request& req, platform::command_runner_base& runner) {
    record_origin origin{req.command_line, {}};
    auto session = open_session(req.workspace, access::write, origin, req.held_lock);
    std::vector<std::string> notes = session.repairs;
    strategy_memory memory(req.memory_db);
    if (int n = reconcile_memory(session, memory); n > 0)
        notes.push_back(fmt::format("strategy memory: recorded {} iteration(s) a killed command had left out", n));
    refuse_past_cap(session);
    auto it = stage_iteration(session, memory, req, static_cast<int>(session.records.size()), runner);
    evaluate_staged(it, session.c, session.ws.state_dir(), req, runner);
    auto out = record_staged(session, memory, it, req, runner);
    out.notes.insert(out.notes.begin(), notes.begin(), notes.end());
    return out;
}

}  // namespace kloop::loop
