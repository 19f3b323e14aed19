// kloop backend/blackbox: gate + bench of a black-box op (see blackbox_evaluation.hpp).
#include "backend/blackbox/blackbox_evaluation.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "backend/blackbox/copy_runner.hpp"
#include "backend/blackbox/gate_env.hpp"
#include "backend/blackbox/gate_reuse.hpp"
#include "backend/blackbox/pytest_summary.hpp"
#include "backend/blackbox/repo_copy.hpp"
#include "backend/python/python_worker.hpp"
#include "core/error.hpp"
#include "eval/record/environment.hpp"
#include "kloop/version.hpp"
#include "measure/early_verdict.hpp"
#include "runner/job.hpp"
#include "platform/file_io.hpp"
#include "platform/host_info.hpp"
#include "platform/sha256.hpp"

namespace kloop::backend::blackbox {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// COLUMNS: pytest cuts its "FAILED <node id> - <message>" lines at the terminal width (80 in a pipe).
env_list gate_kloop_env() { return {{"PYTHONDONTWRITEBYTECODE", "1"}, {"PYTHONUNBUFFERED", "1"}, {"COLUMNS", "200"}}; }

// The stopping-rule hints, the shapes to report and the run's time budget; in an A/B with the
// early verdict on, its settings (a two-sided bench may stop a settled shape); with a [bench]
// registry, kloop's own module on the path (only kloop_worker/ lives there, so the repository's
// packages still come from the copy).
env_list bench_kloop_env(const spec::op_spec& spec, const eval::evaluation_options& o,
                         const measure::ab_config* ab = nullptr) {
    std::string shapes;
    for (const auto& s : spec.blackbox->bench_shapes) shapes += (shapes.empty() ? "" : ",") + s.get_key();
    env_list env{{"PYTHONDONTWRITEBYTECODE", "1"},
                 {"PYTHONUNBUFFERED", "1"},
                 {"KLOOP_BENCH_MIN_SAMPLES", std::to_string(o.stop.min_samples)},
                 {"KLOOP_BENCH_MIN_TIME_S", fmt::format("{}", o.stop.min_time_s)},
                 {"KLOOP_BENCH_MAX_TIME_S", fmt::format("{}", o.stop.max_time_s)},
                 {"KLOOP_BENCH_TARGET_RSD", fmt::format("{}", o.stop.target_rel_stdev)},
                 {"KLOOP_BENCH_SHAPES", shapes}};
    if (spec.blackbox->round_time_s)
        env.emplace_back("KLOOP_BENCH_ROUND_TIME_S", fmt::format("{}", *spec.blackbox->round_time_s));
    if (ab != nullptr && ab->early_verdict)  // the native A/B's settings and look schedule
        env.emplace_back("KLOOP_BENCH_EARLY_VERDICT",
                         runner::early_verdict_json(measure::early_verdict_for(*ab, o.stop.min_time_s)).dump());
    if (spec.blackbox->bench_registry) env.emplace_back("PYTHONPATH", python::worker_dir().string());
    return env;
}

bool has_k_option(const std::vector<std::string>& argv) {
    return std::any_of(argv.begin() + 1, argv.end(),
                       [](const std::string& a) { return a == "-k" || (a.rfind("-k", 0) == 0 && a.size() > 2); });
}

// The gate's command as it runs: the spec's argv (plus -k EXPR for --gate-k), its clean environment, its timeout.
struct gate_plan {
    std::vector<std::string> argv;
    clean_env env;
    double timeout_s = 0;
};

gate_plan plan_gate(const copy_runner& runner, const spec::op_spec& spec, const eval::evaluation_options& options) {
    const auto& bb = *spec.blackbox;
    gate_plan p;
    p.argv = bb.gate.argv;
    if (!options.gate_k.empty()) {
        if (has_k_option(p.argv))
            throw usage_error("option --gate-k: the spec's gate command already selects tests with -k; a partial run "
                              "cannot be combined with it");
        p.argv.push_back("-k");
        p.argv.push_back(options.gate_k);
    }
    p.env = runner.environment_for(bb.gate, gate_kloop_env());
    p.timeout_s = bb.gate.timeout_s.value_or(options.timeout_s);
    return p;
}

eval::repository_gate_run run_gate(copy_runner& runner, const spec::op_spec& spec, const eval::evaluation_options& options,
                                   const gate_plan& plan, const fs::path& candidate, std::size_t& copied_files) {
    eval::repository_gate_run g;
    g.gate_k = options.gate_k;
    g.partial = !options.gate_k.empty();
    auto o = runner.run(spec.blackbox->gate, plan.argv, plan.env, candidate, plan.timeout_s, "gate");
    copied_files = o.copied_files;
    g.run = std::move(o.run);
    g.summary = parse_pytest_output(o.stderr_text + "\n" + o.stdout_text);
    const auto& s = g.summary;
    const auto& r = g.run;
    const std::string counts = s.found ? ": " + s.describe() : "";
    if (r.timed_out) g.reason = "the gate " + r.ended;
    else if (r.term_signal != 0) g.reason = "the gate command was " + r.ended;
    else if (r.exit_code == 5)
        g.reason = g.partial ? "pytest collected no tests (exit 5): --gate-k '" + g.gate_k + "' selects none" + counts
                             : "pytest collected no tests (exit 5)" + counts;
    else if (r.exit_code != 0) g.reason = "pytest " + describe_pytest_exit(r.exit_code) + counts;
    else if (!s.found)
        g.reason = "the gate exited 0 but printed no pytest summary line (kloop needs it to count the tests; `-qq` hides it)";
    else if (s.failed > 0 || s.errors > 0) g.reason = "pytest exited 0 but reported" + counts;
    else if (s.passed < 1) g.reason = "the gate passed no test" + counts;
    if (!o.frozen_changed.empty())
        g.reason = (g.reason.empty() ? "" : g.reason + "; ") + "frozen file '" + o.frozen_changed.front() +
                   "' was modified during the gate run (in kloop's temporary copy)";
    g.green = g.reason.empty();
    return g;
}

struct bench_outcome {
    eval::repository_bench_run run;
    std::vector<bench_output_shape> shapes;
};

std::string last_line_of(std::string t) {
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
    const auto nl = t.rfind('\n');
    return nl == std::string::npos ? t : t.substr(nl + 1);
}

bench_outcome run_bench(copy_runner& runner, const spec::op_spec& spec, const eval::evaluation_options& options,
                        const fs::path& candidate, const std::string& side, int round) {
    const auto& bb = *spec.blackbox;
    bench_outcome b;
    b.run.side = side;
    b.run.round = round;
    const auto env = runner.environment_for(bb.bench, bench_kloop_env(spec, options));
    auto o = runner.run(bb.bench, bb.bench.argv, env, candidate, bb.bench.timeout_s.value_or(options.timeout_s),
                        "bench-" + side + "-" + std::to_string(round));
    b.run.run = std::move(o.run);
    const auto& r = b.run.run;
    if (!r.timed_out && r.term_signal == 0 && r.exit_code == 0) {
        try {
            b.shapes = parse_bench_output(o.stdout_text, bb.bench_shapes);
        } catch (const std::invalid_argument& e) {
            b.run.error = e.what();
        }
    } else {
        const std::string last_err = last_line_of(o.stderr_text);
        b.run.error = "the bench command " + r.ended + (last_err.empty() ? "" : " (stderr: " + last_err + ")");
    }
    if (!o.frozen_changed.empty() && b.run.error.empty())
        b.run.error = "frozen file '" + o.frozen_changed.front() + "' was modified during the bench run";
    b.run.ok = b.run.error.empty();
    return b;
}

// One process timing both sides of an A/B (docs/blackbox.md, "One process, two sides").
struct sides_round {
    bool fell_back = false;        // the bench cannot hold both sides: `reason`
    std::string reason;
    std::string idle_threads;      // threads a side started that the bench let stay, idle
    bench_outcome base;
    bench_outcome candidate;
    std::string failure;           // set: the round failed (attributed to `failed_candidate`'s side)
    bool failed_candidate = true;
};

sides_round run_bench_sides(copy_runner& runner, const eval::ab_context& ctx, int round) {
    const auto& bb = *ctx.spec.blackbox;
    sides_round out;
    // Which side is imported first and timed first in each pair alternates by round.
    std::vector<std::pair<std::string, fs::path>> sides{{"base", ctx.base}, {"candidate", ctx.candidate}};
    if (round % 2 == 1) std::swap(sides[0], sides[1]);
    const auto env = runner.environment_for(bb.bench, bench_kloop_env(ctx.spec, ctx.options, &ctx.ab));
    auto o = runner.run_sides(bb.bench, bb.bench.argv, env, sides, bb.bench.timeout_s.value_or(ctx.options.timeout_s),
                              "bench-sides-" + std::to_string(round));
    for (auto* b : {&out.base, &out.candidate}) {
        b->run.side = b == &out.base ? "base" : "candidate";
        b->run.round = round;
        b->run.run = o.run;
    }
    const auto& r = o.run;
    std::string error;
    bool base_side = false;
    try {
        const auto parsed = parse_sides_output(o.stdout_text, {"base", "candidate"}, bb.bench_shapes);
        if (parsed.what == sides_output::kind::fallback && r.exit_code == 0 && !r.timed_out && r.term_signal == 0) {
            out.fell_back = true;
            out.reason = parsed.message;
            return out;
        }
        if (parsed.what == sides_output::kind::error) {
            error = parsed.void_run ? "the A/B is void: " + parsed.message : parsed.message;
            // A void run names its victim (the base) first; the candidate is the one rejected.
            base_side = !parsed.void_run && parsed.message.rfind("side 'base'", 0) == 0;
        } else if (parsed.what == sides_output::kind::sides && r.exit_code == 0 && !r.timed_out && r.term_signal == 0) {
            out.base.shapes = parsed.shapes.at("base");
            out.idle_threads = parsed.idle_threads;
            out.candidate.shapes = parsed.shapes.at("candidate");
        }
    } catch (const std::invalid_argument& e) {
        error = e.what();
    }
    if (error.empty() && (r.timed_out || r.term_signal != 0 || r.exit_code != 0)) {
        const std::string last_err = last_line_of(o.stderr_text);
        error = "the two-sided bench command " + r.ended + (last_err.empty() ? "" : " (stderr: " + last_err + ")");
    }
    if (!o.frozen_changed.empty() && error.empty())
        error = "frozen file '" + o.frozen_changed.front() + "' was modified during the bench run";
    if (!error.empty()) {
        out.failure = error;
        out.failed_candidate = !base_side;
        (base_side ? out.base : out.candidate).run.error = error;
    }
    out.base.run.ok = out.base.run.error.empty();
    out.candidate.run.ok = out.candidate.run.error.empty();
    return out;
}

eval::integrity_check check(std::string name, eval::check_status st, std::string detail) {
    return eval::integrity_check{std::move(name), st, std::move(detail)};
}

std::string patterns_text(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& p : v) s += (s.empty() ? "" : ", ") + p;
    return s;
}

std::vector<eval::integrity_check> integrity_of(const eval::repository_run& rec, const std::vector<std::string>& refused) {
    std::vector<eval::integrity_check> out;
    std::string env_detail = "none of " + patterns_text(refused) + " set; the commands ran with a clean environment";
    if (!rec.gate.empty()) env_detail += " (" + rec.gate.front().run.env_line + ")";
    out.push_back(check("gate_env_clean", eval::check_status::pass, env_detail));
    if (rec.gate.empty()) return out;
    const auto& g = rec.gate.front();
    const bool touched = g.reason.find("was modified during") != std::string::npos ||
                         std::any_of(rec.bench.begin(), rec.bench.end(),
                                     [](const eval::repository_bench_run& b) { return b.error.find("was modified during") != std::string::npos; });
    out.push_back(check("frozen_files_untouched", touched ? eval::check_status::fail : eval::check_status::pass,
                        touched ? (g.reason.find("was modified during") != std::string::npos ? g.reason : "a bench run modified a frozen file")
                                : std::to_string(rec.frozen.size()) + " frozen files unchanged in the copy after every run"));
    const auto& s = g.summary;
    if (!s.found) {
        out.push_back(check("skipped_tests", eval::check_status::skipped, "no pytest summary"));
    } else {
        const int unexpected_deselected = g.partial ? 0 : s.deselected;
        const bool clean = s.skipped == 0 && unexpected_deselected == 0 && s.xpassed == 0;
        out.push_back(check("skipped_tests", clean ? eval::check_status::pass : eval::check_status::warn,
                            clean ? "no test skipped or deselected"
                                  : s.describe() + ": a skipped or deselected test did not run; an xpassed one did not fail "
                                                   "as marked"));
    }
    return out;
}

eval::build_summary no_build(const spec::op_spec& spec, const std::string& what) {
    eval::build_summary b;
    b.ok = true;
    b.library = (spec.blackbox->root / spec.blackbox->target).string();
    b.diagnostics = "black box: nothing to build; " + what;
    b.device = spec.backend == spec::backend_kind::cuda ? "cuda" : "cpu";
    return b;
}

// "Python 3.11.2" when the gate's program is a python, asked under the gate's environment.
std::string interpreter_version(const spec::op_spec& spec, const clean_env& env, platform::command_runner_base& commands) {
    const auto& argv = spec.blackbox->gate.argv;
    if (argv.empty() || fs::path(argv[0]).filename().string().rfind("python", 0) != 0) return "black-box command";
    platform::process_request req;
    req.argv = argv_with_env(env, {argv[0], "--version"});
    if (fs::exists("/usr/bin/env")) req.argv[0] = "/usr/bin/env";
    req.cwd = spec.blackbox->root;
    req.timeout_s = 20;
    const auto r = commands.run(req);
    std::string v = r.stdout_text.empty() ? r.stderr_text : r.stdout_text;
    while (!v.empty() && (v.back() == '\n' || v.back() == '\r')) v.pop_back();
    if (!r.succeeded() || v.empty()) return argv[0];
    return argv[0] + " (" + v + ")";
}

// What each run reported for one spec shape, in run order.
std::vector<const bench_output_shape*> reports_of(const std::vector<bench_outcome>& runs,
                                                  const spec::blackbox_bench_shape& want) {
    std::vector<const bench_output_shape*> out;
    for (const auto& r : runs)
        for (const auto& got : r.shapes)
            if (got.mode == want.mode && got.name == want.name) out.push_back(&got);
    return out;
}

// "bench command x2", and how the bench says each run's shape stopped when it says so:
// "bench command x2 (early_verdict SLOWER; time_cap)".
std::string stop_reason_of(const std::vector<bench_outcome>& runs, const spec::blackbox_bench_shape& want) {
    std::string said;
    for (const auto* got : reports_of(runs, want))
        if (!got->stop.empty())
            said += (said.empty() ? "" : "; ") + got->stop + (got->early_verdict.empty() ? "" : " " + got->early_verdict);
    return fmt::format("bench command x{}", runs.size()) + (said.empty() ? "" : " (" + said + ")");
}

// The verdict every run of the shape settled early, or "" (one run went on to its rule or cap).
std::string early_verdict_of(const std::vector<bench_outcome>& runs, const spec::blackbox_bench_shape& want) {
    std::string v;
    for (const auto* got : reports_of(runs, want)) {
        if (got->early_verdict.empty() || (!v.empty() && v != got->early_verdict)) return "";
        v = got->early_verdict;
    }
    return v;
}

eval::bench_report bench_report_of(const spec::op_spec& spec, const std::vector<bench_outcome>& runs) {
    eval::bench_report b;
    b.ran = true;
    std::string failure;
    for (const auto& r : runs)
        if (!r.run.ok && failure.empty()) failure = r.run.error;
    if (!runs.empty()) {
        const auto& last = runs.back().run.run;
        if (last.timed_out || last.term_signal != 0) b.runner_failure = last.ended;
    }
    bool all_ok = failure.empty();
    for (const auto& want : spec.blackbox->bench_shapes) {
        eval::bench_shape_report s;
        s.mode = want.mode;
        s.shape = want.name;
        for (const auto* got : reports_of(runs, want)) {
            s.samples_s.insert(s.samples_s.end(), got->samples_s.begin(), got->samples_s.end());
            if (got->flops) s.flops = got->flops;
            if (got->bytes) s.bytes = got->bytes;
        }
        s.stop_reason = stop_reason_of(runs, want);
        if (!failure.empty()) s.error = failure;
        if (!s.samples_s.empty() && failure.empty()) {
            s.stats_s = measure::summarize(s.samples_s);
            s.ok = true;
        }
        all_ok = all_ok && s.ok;
        b.shapes.push_back(std::move(s));
    }
    b.ok = all_ok;
    return b;
}

void fill_environment(const eval::evaluation_context& ctx, eval::evaluation& ev, const clean_env& gate_env) {
    ev.env = eval::collect_environment(ctx);
    const auto git = platform::git_state_of(ctx.spec.blackbox->root, ctx.commands);
    ev.env.git_available = git.available;
    ev.env.git_commit = git.commit;
    ev.env.git_dirty = git.dirty;
    ev.env.flags.clear();
    ev.env.compiler = interpreter_version(ctx.spec, gate_env, ctx.commands);
}

}  // namespace

eval::evaluation evaluate(const eval::evaluation_context& ctx) {
    if (!ctx.spec.blackbox) throw internal_error("blackbox::evaluate on a native op");
    if (!ctx.options.modes.empty())
        throw usage_error("option --mode does not apply to a black-box op: the repository's gate command selects its "
                          "tests (use --gate-k EXPR for a partial run)");
    const auto& bb = *ctx.spec.blackbox;
    fs::create_directories(ctx.scratch_dir);
    copy_runner runner(ctx.spec, ctx.commands, ctx.scratch_dir, ctx.state_dir, ctx.leave_out);
    // Refuse weakening variables before anything runs (both commands' environments).
    const gate_plan plan = plan_gate(runner, ctx.spec, ctx.options);
    const auto& gate_env = plan.env;
    (void)runner.environment_for(bb.bench, bench_kloop_env(ctx.spec, ctx.options));

    eval::evaluation ev;
    ev.op = ctx.spec.name;
    ev.candidate = ctx.candidate.string();
    fill_environment(ctx, ev, gate_env);
    const std::string placed = "the candidate is copied to '" + bb.target.string() + "' in a temporary copy of '" +
                               bb.root.string() + "'";
    ev.candidate_build = no_build(ctx.spec, placed);
    ev.reference_build = no_build(ctx.spec, "the gate command's tests hold the reference");
    ev.reference_build.library.clear();

    eval::repository_run rec;
    rec.repo_root = bb.root.string();
    rec.target = bb.target.string();
    for (const auto& f : ctx.spec.frozen) rec.frozen.push_back(f.string());
    rec.refused_env = runner.refused();

    // Gate: the repository's own command, in a fresh copy — or, for a side the caller marks, a
    // green gate stored for byte-identical inputs (gate_reuse). Only full gates are stored.
    std::string key;
    std::optional<eval::repository_gate_run> reused;
    if (!ctx.state_dir.empty() && ctx.options.gate_k.empty()) {
        key = gate_key(gate_inputs{runner.tree_digest(ctx.candidate), plan.argv, bb.gate.cwd.generic_string(), plan.env.vars,
                                   ev.env.compiler, plan.timeout_s});
        if (ctx.reuse_green_gate) reused = load_green_gate(ctx.state_dir / "gates", key);
    }
    auto gate = reused ? std::move(*reused) : run_gate(runner, ctx.spec, ctx.options, plan, ctx.candidate, rec.copied_files);
    if (reused) {
        gate.run.argv = plan.argv;
        gate.run.cwd = bb.gate.cwd.empty() ? "." : bb.gate.cwd.string();
        gate.run.env = plan.env.vars;
        gate.run.env_line = plan.env.describe();
        gate.run.timeout_s = plan.timeout_s;
    } else if (gate.green && !key.empty()) {
        store_green_gate(ctx.state_dir / "gates", key, gate);
    }
    ev.gate.pass = gate.green;
    ev.gate.partial = gate.partial;
    ev.gate.gate_k = gate.gate_k;
    if (gate.run.timed_out || gate.run.term_signal != 0) ev.gate.runner_failure = gate.run.ended;
    ev.gate.wall_s = gate.run.wall_s;
    int id = 0;
    for (const auto& f : gate.summary.failures) {
        eval::case_report c;
        c.id = id++;
        c.mode = "pytest";
        c.shape = f.node_id;
        c.reason = f.kind + (f.message.empty() ? "" : ": " + f.message);
        ev.gate.cases.push_back(std::move(c));
    }
    if (!gate.green && ev.gate.cases.empty()) {
        eval::case_report c;
        c.mode = "gate";
        c.shape = "command";
        c.reason = gate.reason;
        ev.gate.cases.push_back(std::move(c));
    }
    rec.gate.push_back(gate);

    if (!gate.green) {
        ev.status = eval::disposition::gate_failed;
        ev.reason = "the gate is red: " + gate.reason;
        ev.integrity = integrity_of(rec, runner.refused());
        ev.repository = std::move(rec);
        return ev;
    }

    // Bench: only on a green gate, each run in a fresh copy.
    if (ctx.options.bench) {
        std::vector<bench_outcome> runs;
        for (int round = 0; round < bb.rounds; ++round) {
            runs.push_back(run_bench(runner, ctx.spec, ctx.options, ctx.candidate, "candidate", round));
            if (!runs.back().run.ok) break;
        }
        ev.bench = bench_report_of(ctx.spec, runs);
        for (const auto& r : runs) {
            rec.bench.push_back(r.run);
            ev.bench.wall_s += r.run.run.wall_s;
        }
        if (!ev.bench.ok) {
            ev.status = eval::disposition::gate_failed;
            ev.reason = "the bench failed: " + (rec.bench.empty() ? std::string("not run") : rec.bench.back().error);
        }
    }
    ev.integrity = integrity_of(rec, runner.refused());
    for (const auto& c : ev.integrity)
        if (c.status == eval::check_status::fail && ev.status == eval::disposition::passed) {
            ev.status = eval::disposition::gate_failed;
            ev.reason = "integrity check '" + c.name + "' failed: " + c.detail;
        }
    ev.repository = std::move(rec);
    return ev;
}

namespace {

std::string side_failure(const char* side, const eval::evaluation& ev) {
    return std::string("the ") + side + "'s gate is red: " + ev.reason;
}

// A fallback the base's own import caused ("importing side 'base' …", the base imported first)
// depends only on the base's bytes and how the bench runs: later A/Bs of the same base (the next
// iterations of a loop, the runs of `kloop noise`) skip the one-process attempt, which costs a
// bench process importing both sides. Kept under the state directory by a key over the base
// copy's tree digest, the bench's argv, working directory and environment; never for a fallback
// the candidate caused. The memo's first line names the kloop build that wrote it: another build
// (whose bench module may hold both sides where this one could not) tries one process again.
constexpr std::string_view k_base_fallback_prefix = "importing side 'base' ";

std::string fallback_memo_header() {
    return fmt::format("kloop {} {}{}\n", build_info::version, build_info::git_commit, build_info::git_dirty ? " dirty" : "");
}

std::string base_fallback_key(copy_runner& runner, const eval::ab_context& ctx) {
    const auto& bb = *ctx.spec.blackbox;
    const auto env = runner.environment_for(bb.bench, bench_kloop_env(ctx.spec, ctx.options, &ctx.ab));
    return gate_key(gate_inputs{runner.tree_digest(ctx.base), bb.bench.argv, "bench-sides " + bb.bench.cwd.generic_string(),
                                env.vars, "", bb.bench.timeout_s.value_or(ctx.options.timeout_s)});
}

std::string remembered_base_fallback(const fs::path& state_dir, const std::string& key) {
    if (state_dir.empty()) return {};
    std::error_code ec;
    const fs::path f = state_dir / "ab-fallbacks" / (key + ".txt");
    if (!fs::is_regular_file(f, ec)) return {};
    try {
        const std::string memo = platform::read_file(f);
        const std::string header = fallback_memo_header();
        if (memo.rfind(header, 0) != 0) return {};  // another kloop build's memo
        const std::string reason = memo.substr(header.size());
        return reason.rfind(k_base_fallback_prefix, 0) == 0 ? reason : std::string();
    } catch (const std::exception&) {
        return {};
    }
}

void remember_base_fallback(const fs::path& state_dir, const std::string& key, const std::string& reason) {
    if (state_dir.empty() || reason.rfind(k_base_fallback_prefix, 0) != 0) return;
    try {
        platform::ensure_directory(state_dir / "ab-fallbacks");
        platform::write_file_atomic(state_dir / "ab-fallbacks" / (key + ".txt"), fallback_memo_header() + reason);
    } catch (const std::exception&) {
        // a memo only: the next A/B tries one process again
    }
}

void time_rounds(const eval::ab_context& ctx, eval::ab_evaluation& r, int run, const std::string& known_fallback) {
    const auto& bb = *ctx.spec.blackbox;
    const fs::path scratch = ctx.scratch_dir / (run == 0 ? std::string("ab") : "ab-run-" + std::to_string(run));
    fs::create_directories(scratch);
    copy_runner runner(ctx.spec, ctx.commands, scratch, ctx.state_dir, ctx.leave_out);
    std::vector<bench_outcome> base_runs, cand_runs;
    std::string failure;
    bool failed_side_candidate = false;
    bool one_process = bb.bench_sides;
    std::string fallback;
    std::string idle_threads;
    std::string key;
    if (one_process) {
        std::string known = known_fallback.rfind(k_base_fallback_prefix, 0) == 0 ? known_fallback : std::string();
        if (known.empty() && !ctx.state_dir.empty()) {
            key = base_fallback_key(runner, ctx);
            known = remembered_base_fallback(ctx.state_dir, key);
        }
        if (!known.empty()) {
            const std::string note = " [remembered from an earlier A/B of this base: one process not tried again]";
            fallback = known.size() > note.size() && known.compare(known.size() - note.size(), note.size(), note) == 0
                           ? known
                           : known + note;
            one_process = false;
        }
    }
    for (int round = 0; round < bb.rounds && failure.empty(); ++round) {
        if (one_process) {
            auto sr = run_bench_sides(runner, ctx, round);
            if (sr.fell_back) {
                // Every round from here in separate processes, this one included.
                fallback = sr.reason;
                one_process = false;
                base_runs.clear();
                cand_runs.clear();
                if (round == 0 && !ctx.state_dir.empty())  // round 0 imports the base first
                    remember_base_fallback(ctx.state_dir, key.empty() ? base_fallback_key(runner, ctx) : key, sr.reason);
            } else {
                if (!sr.failure.empty()) {
                    failure = sr.failure;
                    failed_side_candidate = sr.failed_candidate;
                }
                if (idle_threads.empty()) idle_threads = sr.idle_threads;
                base_runs.push_back(std::move(sr.base));
                cand_runs.push_back(std::move(sr.candidate));
                continue;
            }
        }
        // ABBA: alternate which side runs first, so a drift over time weighs on both sides alike.
        const bool base_first = round % 2 == 0;
        for (int k = 0; k < 2 && failure.empty(); ++k) {
            const bool is_base = (k == 0) == base_first;
            auto b = run_bench(runner, ctx.spec, ctx.options, is_base ? ctx.base : ctx.candidate,
                               is_base ? "base" : "candidate", round);
            if (!b.run.ok) {
                failure = b.run.error;
                failed_side_candidate = !is_base;
            }
            (is_base ? base_runs : cand_runs).push_back(std::move(b));
        }
    }
    r.timed = true;
    const std::string timing = one_process ? "one process, both sides interleaved (ABBA per sample, the side order "
                                             "alternating by round)" +
                                                 (idle_threads.empty() ? std::string()
                                                                       : "; threads left idle, none ran: " + idle_threads)
                                           : "separate processes (ABBA per round)";
    for (auto* side : {&r.base, &r.candidate}) {
        side->repository->ab_timing = timing;
        side->repository->ab_timing_fallback = fallback;
    }
    for (const auto& b : base_runs) r.base.repository->bench.push_back(b.run);
    for (const auto& b : cand_runs) r.candidate.repository->bench.push_back(b.run);
    const auto& last = failed_side_candidate ? cand_runs : base_runs;
    if (!failure.empty() && !last.empty() && (last.back().run.run.timed_out || last.back().run.run.term_signal != 0))
        r.runner_failure = last.back().run.run.ended;

    const auto base_report = bench_report_of(ctx.spec, base_runs);
    const auto cand_report = bench_report_of(ctx.spec, cand_runs);
    bool all_ok = true;
    std::vector<std::pair<std::vector<double>, std::vector<double>>> pairs;
    for (std::size_t i = 0; i < bb.bench_shapes.size(); ++i) {
        eval::ab_shape_result s;
        s.mode = bb.bench_shapes[i].mode;
        s.shape = bb.bench_shapes[i].name;
        s.base_stop_reason = stop_reason_of(base_runs, bb.bench_shapes[i]);
        s.candidate_stop_reason = stop_reason_of(cand_runs, bb.bench_shapes[i]);
        s.early_verdict = one_process ? early_verdict_of(cand_runs, bb.bench_shapes[i]) : "";
        if (!failure.empty()) {
            s.error = std::string("the ") + (failed_side_candidate ? "candidate" : "base") + "'s bench failed: " + failure;
        } else {
            s.base_samples_s = base_report.shapes[i].samples_s;
            s.candidate_samples_s = cand_report.shapes[i].samples_s;
            s.base_s = base_report.shapes[i].stats_s;
            s.candidate_s = cand_report.shapes[i].stats_s;
            try {
                s.verdict = measure::compare_samples(s.base_samples_s, s.candidate_samples_s, r.config);
                s.ok = true;
                pairs.emplace_back(s.base_samples_s, s.candidate_samples_s);
            } catch (const std::invalid_argument& x) {
                s.error = x.what();
            }
        }
        all_ok = all_ok && s.ok;
        r.shapes.push_back(std::move(s));
    }
    if (!pairs.empty()) r.overall = measure::combine_geomean(pairs, r.config);
    r.ok = all_ok && !r.shapes.empty();
    if (!r.ok)
        for (const auto& s : r.shapes)
            if (!s.ok) {
                r.reason = s.mode + "/" + s.shape + ": " + s.error;
                break;
            }
}

}  // namespace

eval::ab_evaluation compare(const eval::ab_context& ctx) {
    if (!ctx.spec.blackbox) throw internal_error("blackbox::compare on a native op");
    auto r = eval::new_ab_evaluation(ctx);
    auto options = ctx.options;
    options.bench = false;
    fs::create_directories(ctx.scratch_dir / "base");
    fs::create_directories(ctx.scratch_dir / "candidate");
    r.base = blackbox::evaluate(eval::evaluation_context{ctx.spec, ctx.base, options, ctx.commands, ctx.cache_dir,
                                                         ctx.scratch_dir / "base", ctx.state_dir, ctx.reuse_base_gate,
                                                         ctx.leave_out});
    r.candidate = blackbox::evaluate(eval::evaluation_context{ctx.spec, ctx.candidate, options, ctx.commands, ctx.cache_dir,
                                                              ctx.scratch_dir / "candidate", ctx.state_dir, false,
                                                              ctx.leave_out});
    r.env = r.candidate.env;
    if (r.base.status != eval::disposition::passed || r.candidate.status != eval::disposition::passed) {
        std::string why;
        if (r.base.status != eval::disposition::passed) why = side_failure("base", r.base);
        if (r.candidate.status != eval::disposition::passed)
            why += (why.empty() ? "" : "; ") + side_failure("candidate", r.candidate);
        r.reason = why + " (no timing without two green gates)";
        return r;
    }
    time_rounds(ctx, r, 0, {});
    return r;
}

eval::ab_evaluation retime(const eval::ab_context& ctx, const eval::ab_evaluation& gated, int run) {
    if (!gated.timed) throw internal_error("blackbox::retime: the pair was never timed (a red side)");
    eval::ab_evaluation r = gated;
    r.shapes.clear();
    r.overall.reset();
    r.ok = false;
    r.reason.clear();
    r.runner_failure.clear();
    if (r.base.repository) r.base.repository->bench.clear();
    if (r.candidate.repository) r.candidate.repository->bench.clear();
    // The gated pair's own fallback, when the base's import caused it, holds for every later run.
    const std::string known = gated.base.repository ? gated.base.repository->ab_timing_fallback : std::string();
    time_rounds(ctx, r, run, known);
    return r;
}

}  // namespace kloop::backend::blackbox
