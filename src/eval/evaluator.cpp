// kloop eval: the build → gate → bench pipeline.
#include "eval/evaluator.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "backend/backend.hpp"
#include "core/rng.hpp"
#include "core/error.hpp"
#include "eval/call_judgement.hpp"
#include "eval/candidate_integrity.hpp"
#include "eval/isolation_checks.hpp"
#include "eval/physics_floor.hpp"
#include "eval/plan_builder.hpp"
#include "eval/runner_session.hpp"
#include "eval/sample_clock_facts.hpp"
#include "eval/record/environment.hpp"

namespace kloop::eval {

namespace {

using nlohmann::json;

build_summary summarize_build(const backend::build_record& r) {
    build_summary b;
    b.ok = r.ok;
    b.cache_hit = r.cache_hit;
    b.library = r.library.string();
    b.library_sha256 = r.library_sha256;
    b.argv = r.argv;
    b.compiler_version = r.compiler_version;
    b.diagnostics = r.diagnostics;
    b.wall_s = r.wall_s;
    b.target = r.target;
    b.ptxas = r.ptxas;
    return b;
}

// The events of a gate or bench session by item id.
struct event_index {
    std::map<int, const runner::case_result_event*> case_result;
    std::map<int, const runner::bench_result_event*> bench_result;
    std::set<int> started;
    std::map<int, std::string> last_stage;

    explicit event_index(const std::vector<runner::event>& events) {
        for (const auto& e : events) {
            if (const auto* x = std::get_if<runner::case_result_event>(&e)) case_result[x->id] = x;
            else if (const auto* b = std::get_if<runner::bench_result_event>(&e)) bench_result[b->id] = b;
            else if (const auto* st = std::get_if<runner::stage_event>(&e)) last_stage[st->id] = st->stage;
            else if (const auto* i = std::get_if<runner::item_start_event>(&e)) started.insert(i->id);
        }
    }
};

using judged_calls = std::vector<std::pair<call_judgement, std::string>>;

gate_report interpret_gate(const runner::job& job, const runner_session& s, bool partial, const std::string& gate_k,
                           const std::vector<std::uint64_t>& seeds, judged_calls& judged) {
    gate_report g;
    g.partial = partial;
    g.gate_k = gate_k;
    g.seeds = seeds;
    g.runner_failure = s.describe_failure();
    g.wall_s = s.process.wall_s;
    const event_index idx(s.events);
    bool all_pass = true;
    for (const auto& c : job.gate) {
        const auto& plan = job.calls[static_cast<std::size_t>(c.call)];
        case_report r;
        r.id = c.id;
        r.mode = plan.mode;
        r.shape = plan.shape;
        r.trial = c.trial;
        r.seed = c.seed;
        if (auto it = idx.case_result.find(c.id); it != idx.case_result.end()) {
            const json& facts = it->second->facts;
            const auto verdict = judge_call(plan, facts);
            judged.emplace_back(verdict, plan.get_label() + " trial " + std::to_string(c.trial));
            r.pass = verdict.pass;
            r.reason = verdict.reason;
            if (facts.contains("same_address_recheck")) {
                const auto recheck = judge_call(plan, facts.at("same_address_recheck"));
                judged.emplace_back(recheck, plan.get_label() + " trial " + std::to_string(c.trial) +
                                                 " same-address recheck");
                if (r.pass && !recheck.pass) {
                    r.pass = false;
                    r.reason = "called again with new input values at the same addresses: " + recheck.reason;
                }
            }
            r.outputs = verdict.outputs;
            r.call_s = facts.value("call_s", 0.0);
            r.candidate_s = facts.value("candidate_s", r.call_s);
            if (facts.contains("deterministic")) r.deterministic = facts.at("deterministic").get<bool>();
        } else if (idx.started.count(c.id) != 0) {
            const auto stage = idx.last_stage.count(c.id) ? idx.last_stage.at(c.id) : std::string("candidate");
            r.reason = g.runner_failure.empty() ? "no result" : g.runner_failure + " in the " + stage;
        } else {
            r.reason = g.runner_failure.empty() ? "not run" : "not run: " + g.runner_failure;
        }
        all_pass = all_pass && r.pass;
        g.cases.push_back(std::move(r));
    }
    g.pass = all_pass && s.finished && s.fatal.empty();
    return g;
}

bench_report interpret_bench(const runner::job& job, const runner_session& s, const spec::op_spec& spec,
                             judged_calls& judged) {
    bench_report b;
    b.ran = true;
    b.evict_bytes = job.evict_bytes;
    b.runner_failure = s.describe_failure();
    b.wall_s = s.process.wall_s;
    // A GPU runner flushes 2 x its L2 per sample (job.evict_bytes 0).
    if (const auto* start = start_of(s.events); start != nullptr && start->candidate_device.is_object())
        b.evict_bytes = std::max(b.evict_bytes, start->candidate_device.value("flush_bytes_per_sample", std::uint64_t{0}));
    const event_index idx(s.events);
    bool all_ok = true;
    for (const auto& item : job.bench) {
        const auto& plan = job.calls[static_cast<std::size_t>(item.call)];
        b.seed = item.seed;
        bench_shape_report r;
        r.mode = plan.mode;
        r.shape = plan.shape;
        const auto cost = spec_cost(spec, plan);
        r.flops = cost.flops;
        r.bytes = cost.bytes;
        if (auto it = idx.bench_result.find(item.id); it != idx.bench_result.end()) {
            const runner::bench_result_event& e = *it->second;
            if (e.failure) {
                r.error = runner::describe_call_failure("the candidate", *e.failure);
            } else {
                r.samples_s = e.samples_s;
                r.stop_reason = e.stop_reason;
                r.warmup_calls = e.warmup_calls;
                r.input_sets = e.input_sets;
                r.flush_bytes = e.flush_bytes;
                r.graph_replay_s_per_call = e.graph_replay_s_per_call;
                r.graph_replay_error = e.graph_replay_error;
                r.discarded_samples = e.discarded_samples;
                const auto clocks = clock_facts_of(e.sample_info);
                r.sm_clock_mhz_median = clocks.sm_clock_mhz_median;
                if (!r.samples_s.empty()) {
                    r.stats_s = measure::summarize(r.samples_s);
                    r.warnings = timing_warnings(r.samples_s, r.stop_reason, r.discarded_samples, clocks);
                }
                for (const auto& chk : e.checks) {
                    ++r.checks_total;
                    const auto verdict = judge_call(plan, chk);
                    judged.emplace_back(verdict, plan.get_label() + " timed sample " + std::to_string(chk.value("sample", 0)));
                    if (!verdict.pass) {
                        ++r.checks_failed;
                        if (r.first_check_failure.empty())
                            r.first_check_failure = describe_timed_check(chk) + ": " + verdict.reason;
                    }
                }
                r.ok = r.checks_failed == 0 && r.stats_s.has_value();
                if (r.checks_failed > 0)
                    r.error = std::to_string(r.checks_failed) + " of " + std::to_string(r.checks_total) +
                              " timed calls checked failed; first: " + r.first_check_failure;
            }
        } else if (idx.started.count(item.id) != 0) {
            r.error = (b.runner_failure.empty() ? std::string("no result") : b.runner_failure) + " while timing";
        } else {
            r.error = b.runner_failure.empty() ? "not run" : "not run: " + b.runner_failure;
        }
        all_ok = all_ok && r.ok;
        b.shapes.push_back(std::move(r));
    }
    b.ok = all_ok && s.finished;
    return b;
}

integrity_check make_check(std::string name, check_status st, std::string detail) {
    return integrity_check{std::move(name), st, std::move(detail)};
}

std::vector<integrity_check> integrity_checks(const gate_report& g, const bench_report& b,
                                              const judged_calls& judged) {
    std::vector<integrity_check> out;
    int unwritten = 0, red = 0, changed = 0;
    std::string first_unwritten, first_red, first_changed;
    for (const auto& [j, where] : judged) {
        if (j.unwritten_outputs && unwritten++ == 0) first_unwritten = where + ": " + j.reason;
        if (j.red_zone_damage && red++ == 0) first_red = where + ": " + j.reason;
        if (j.inputs_changed && changed++ == 0) first_changed = where + ": " + j.reason;
    }
    const bool any = !judged.empty();
    auto status_of = [&](int n) { return !any ? check_status::skipped : n == 0 ? check_status::pass : check_status::fail; };
    out.push_back(make_check("poison_unwritten_outputs", status_of(unwritten),
                             unwritten ? first_unwritten : "every output element written in every checked call"));
    out.push_back(make_check("red_zones", status_of(red), red ? first_red : "no write outside any buffer"));
    out.push_back(make_check("inputs_unchanged", status_of(changed),
                             changed ? first_changed : "inputs bit-identical after every checked call"));

    int det_runs = 0, det_bad = 0;
    for (const auto& c : g.cases)
        if (c.deterministic) {
            ++det_runs;
            if (!*c.deterministic) ++det_bad;
        }
    out.push_back(make_check("determinism_rerun",
                             det_runs == 0 ? check_status::skipped : det_bad ? check_status::warn : check_status::pass,
                             det_runs == 0 ? "not run"
                                           : std::to_string(det_runs - det_bad) + " of " + std::to_string(det_runs) +
                                                 " re-runs on the same inputs gave identical bits"));
    if (!b.ran) {
        out.push_back(make_check("timed_output_checks", check_status::skipped, "bench not run"));
    } else {
        int total = 0, failed = 0;
        std::string first;
        for (const auto& s : b.shapes) {
            total += s.checks_total;
            failed += s.checks_failed;
            if (first.empty() && !s.first_check_failure.empty()) first = s.mode + "/" + s.shape + " " + s.first_check_failure;
        }
        out.push_back(make_check("timed_output_checks",
                                 total == 0 ? check_status::warn : failed ? check_status::fail : check_status::pass,
                                 failed ? first
                                        : std::to_string(total) + " timed calls with new inputs at the same addresses checked"));
    }
    out.push_back(make_check("seed_drawn_at_check_time", g.seeds.size() >= 3 ? check_status::pass : check_status::fail,
                             "trial seeds: " + [&] {
                                 std::string s;
                                 for (auto x : g.seeds) s += (s.empty() ? "" : ", ") + std::to_string(x);
                                 return s;
                             }()));
    return out;
}

}  // namespace

backend::local_sources candidate_sources(const spec::op_spec& spec, const std::filesystem::path& candidate) {
    const auto& be = backend::backend_for(spec);
    const auto plan = be.plan(spec, candidate, backend::source_role::candidate);
    return backend::find_local_sources(candidate, plan.builder, be.header_dirs(spec), spec.candidate.files);
}

backend::build_record build_run_source(const evaluation_context& ctx, const std::filesystem::path& source,
                                       backend::source_role role) {
    // A candidate is its directory's files: one that reaches elsewhere is refused in every verb,
    // since the loop could not stage it (backend/local_sources.hpp).
    std::optional<backend::local_sources> sources;
    if (role == backend::source_role::candidate) sources = candidate_sources(ctx.spec, source);
    const backend::build_inputs in{ctx.spec, source, role, sources ? &*sources : nullptr, ctx.cache_dir,
                                   ctx.options.compile_timeout_s, ctx.commands};
    progress_update u;
    u.step = "build";
    u.subject = source.filename().string();
    u.state = "compiling";
    report_progress(ctx.options.progress, u);
    auto built = backend::backend_for(ctx.spec).build(in);
    u.finished = true;
    u.state = !built.ok ? "failed" : built.cache_hit ? "cached" : "built";
    u.timed_s = built.wall_s;
    report_progress(ctx.options.progress, u);
    return built;
}

evaluation evaluate(const evaluation_context& ctx) {
    const auto& be = backend::backend_for(ctx.spec);
    if (const auto* own = be.own_pipeline()) return own->evaluate(ctx);  // e.g. a repository's own gate and bench
    evaluation ev;
    ev.op = ctx.spec.name;
    ev.candidate = ctx.candidate.string();
    ev.env = collect_environment(ctx);
    be.require_support(ctx.spec);
    const auto cand_device = be.plan(ctx.spec, ctx.candidate, backend::source_role::candidate).device;
    const auto ref_device = be.plan(ctx.spec, ctx.spec.reference, backend::source_role::reference).device;

    // Phase 1: build. The reference failing to build is the spec's problem, not the candidate's.
    const auto ref_build = build_run_source(ctx, ctx.spec.reference, backend::source_role::reference);
    ev.reference_build = summarize_build(ref_build);
    ev.reference_build.device = ref_device;
    if (!ref_build.ok)
        throw build_error("the reference '" + ctx.spec.reference.string() + "' failed to build:\n" + ref_build.diagnostics);
    const auto cand_build = build_run_source(ctx, ctx.candidate, backend::source_role::candidate);
    ev.candidate_build = summarize_build(cand_build);
    ev.candidate_build.device = cand_device;
    ev.env.compiler = cand_build.compiler_version;
    if (!cand_build.ok) {
        ev.status = disposition::build_failed;
        ev.reason = "the candidate failed to build";
        ev.integrity = integrity_checks(ev.gate, ev.bench, {});
        return ev;
    }

    // Phase 2: gate, in its own runner process.
    const std::uint64_t drawn = ctx.options.seed.value_or(draw_seed());
    const auto seeds = gate_seeds(ctx.spec, std::max(3, ctx.options.trials), drawn);
    auto gate_job = build_gate_job(ctx.spec, ctx.options, seeds);
    gate_job.candidate_lib = cand_build.library.string();
    gate_job.reference_lib = ref_build.library.string();
    gate_job.candidate_sha256 = cand_build.library_sha256;
    gate_job.reference_sha256 = ref_build.library_sha256;
    gate_job.candidate_device = cand_device;
    gate_job.reference_device = ref_device;
    const auto gate_session = run_runner(be, gate_job, ctx.scratch_dir, ctx.spec.runner_timeout_s(ctx.options.timeout_s),
                                         ctx.commands, {}, ctx.options.max_output_bytes, ctx.options.max_memory_bytes,
                                         ctx.options.progress);
    if (gate_session.process.interrupted) throw error(exit_code::interrupted, "interrupted");
    judged_calls judged;
    ev.gate = interpret_gate(gate_job, gate_session, !ctx.options.gate_k.empty(), ctx.options.gate_k, seeds, judged);
    ev.gate.held_out = held_out_calls(gate_job);  // the held-out draw, recorded for review
    ev.census_kernels = census_kernel_names(gate_job, gate_session.events);
    ev.isolation = session_isolation(gate_session.events);
    integrity_check timer_check{"timer_cross_check", check_status::skipped, "bench not run"};
    ev.census = gather_gate_census(gate_job, gate_session.events);
    ev.census.aten_glue_share = ctx.spec.python.aten_glue_share;

    // Candidate-level integrity checks: what the built artefact is (the backend's own check:
    // imported symbols of a shared object, the source screen of a Python module) and which
    // kernels the gate's checked calls ran (eval/candidate_integrity.hpp), then the backend's
    // checks over the sessions' events. Appended to the per-call checks; a fail rejects the
    // candidate even when every call's numbers were right, and skips the bench.
    std::vector<runner::event> bench_events;
    const auto artefact_check = be.artefact_check(cand_build);
    auto add_candidate_checks = [&](evaluation& e) {
        e.integrity.push_back(artefact_check);
        e.integrity.push_back(isolation_check(e.isolation));
        e.integrity.push_back(timer_check);
        for (auto& c : be.run_checks({&gate_session.events, &bench_events})) e.integrity.push_back(std::move(c));
        for (auto& c : census_checks(e.census, e.bench)) e.integrity.push_back(std::move(c));
        if (e.status != disposition::passed) return;
        for (const auto& c : e.integrity)
            if (c.status == check_status::fail) {
                e.status = disposition::gate_failed;
                e.reason = "integrity check '" + c.name + "' failed: " + c.detail;
                return;
            }
    };

    if (!ev.gate.pass) {
        ev.status = disposition::gate_failed;
        ev.reason = "the gate is red";
        ev.integrity = integrity_checks(ev.gate, ev.bench, judged);
        add_candidate_checks(ev);
        return ev;
    }
    ev.integrity = integrity_checks(ev.gate, ev.bench, judged);
    add_candidate_checks(ev);
    if (ev.status != disposition::passed) return ev;

    // Phase 3: bench, in a fresh runner process (green gate only).
    auto physics = physics_floor_not_timed();  // no median may beat the hardware (eval/physics_floor)
    if (ctx.options.bench) {
        // On a GPU, 0 means "2 x L2 of the device": the runner knows it, and flushes that much
        // before every sample anyway (docs/measurement.md, GPU timing protocol).
        // The Python worker with torch tensors on the GPU flushes 2 x L2 per sample the same way.
        const bool on_gpu = be.timed_on_gpu(ev.candidate_build);
        const std::uint64_t evict = ctx.options.evict_bytes ? ctx.options.evict_bytes
                                    : on_gpu                ? 0
                                                            : 2 * ev.env.llc_bytes;
        auto bench_job = build_bench_job(ctx.spec, ctx.options, derive_seed(drawn, "bench"), evict);
        bench_job.candidate_lib = gate_job.candidate_lib;
        bench_job.reference_lib = gate_job.reference_lib;
        bench_job.candidate_sha256 = gate_job.candidate_sha256;
        bench_job.reference_sha256 = gate_job.reference_sha256;
        bench_job.candidate_device = gate_job.candidate_device;
        bench_job.reference_device = gate_job.reference_device;
        // Per item: the timed cap plus room for the host-side work around it (input generation,
        // checked samples with the reference and an element-wise comparison), which dominates on
        // large GPU shapes: ~tens of seconds per item for 128M-element tensors on the H200 host.
        const double timeout = ctx.spec.runner_timeout_s(ctx.options.timeout_s) +
                               static_cast<double>(bench_job.bench.size()) * (ctx.options.stop.max_time_s + 60.0);
        platform::host_load_sampler load;  // other work on the machine while it times
        const auto bench_session = run_runner(be, bench_job, ctx.scratch_dir, timeout, ctx.commands, {},
                                              ctx.options.max_output_bytes, ctx.options.max_memory_bytes,
                                              ctx.options.progress);
        const auto host_load = load.stop();
        if (bench_session.process.interrupted) throw error(exit_code::interrupted, "interrupted");
        ev.bench = interpret_bench(bench_job, bench_session, ctx.spec, judged);
        ev.bench.host_load = host_load;
        ev.bench.warnings = measure::busy_machine_warning(host_load.busy(), host_load.describe());
        ev.isolation = merge_isolation(ev.isolation, session_isolation(bench_session.events));
        timer_check = timer_cross_check(bench_job, bench_session.events);
        physics = bench_physics_check(bench_job, bench_session.events, ev.bench, ev.env);
        bench_events = bench_session.events;
        if (!ev.bench.ok) {
            ev.status = disposition::gate_failed;
            ev.reason = "the bench failed: a timed call was rejected";
            for (const auto& s : ev.bench.shapes)
                if (!s.ok) {
                    ev.reason = s.mode + "/" + s.shape + ": " + s.error;
                    break;
                }
        }
    }
    ev.integrity = integrity_checks(ev.gate, ev.bench, judged);
    ev.integrity.push_back(physics);
    add_candidate_checks(ev);
    return ev;
}

}  // namespace kloop::eval
