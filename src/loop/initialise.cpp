// kloop loop: `kloop init` (see initialise.hpp).
#include "loop/initialise.hpp"

#include <memory>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "backend/local_sources.hpp"
#include "core/error.hpp"
#include "eval/evaluator.hpp"
#include "loop/record/contract.hpp"
#include "loop/fault_point.hpp"
#include "report/iteration_summary.hpp"
#include "loop/loop_session.hpp"
#include "report/opt_log.hpp"
#include "loop/repo_git.hpp"
#include "report/task_documents.hpp"
#include "loop/version_profile.hpp"
#include "report/dispatch.hpp"
#include "platform/file_io.hpp"
#include "platform/host_info.hpp"
#include "platform/paths.hpp"
#include "platform/sha256.hpp"
#include "report/evaluation_json.hpp"
#include "report/evaluation_text.hpp"
#include "spec/spec_loader.hpp"
#include "platform/utc_time.hpp"

namespace kloop::loop {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// What an init writes into the workspace before its contract.json (and the lock itself).
bool written_by_init(const std::string& name) {
    static const std::set<std::string> names = {".lock", "docs", "OPT_LOG.md", "TRAPS.md", "dispatch.md", "iter_v0",
                                                "run_manifest.json"};
    return names.count(name) > 0 || name.rfind(".staging-", 0) == 0;
}

// A workspace directory that holds anything else is someone's: init refuses it.
void refuse_foreign_content(const fs::path& root) {
    std::error_code ec;
    if (!fs::exists(root, ec)) return;
    if (!fs::is_directory(root, ec))
        throw usage_error(fmt::format("workspace '{}' exists and is not a directory; pick another --workspace", root.string()));
    for (const auto& e : fs::directory_iterator(root, ec))
        if (!written_by_init(e.path().filename().string()))
            throw usage_error(fmt::format("workspace '{}' exists and is not empty ('{}'); pick another --workspace",
                                          root.string(), e.path().filename().string()));
}

// With the lock held and no contract.json: whatever an init wrote belongs to one that died.
bool remove_dead_init_leftovers(const workspace& ws) {
    bool removed = false;
    std::error_code ec;
    std::vector<fs::path> leftovers;
    for (const auto& e : fs::directory_iterator(ws.root(), ec))
        if (e.path().filename() != ".lock") leftovers.push_back(e.path());
    for (const auto& p : leftovers) removed = fs::remove_all(p, ec) > 0 || removed;
    return removed;
}

}  // namespace

init_outcome initialise(const init_request& req, platform::command_runner_base& runner) {
    init_outcome out;
    const auto spec = spec::load_op_spec(req.op_dir);
    if (!fs::is_regular_file(req.candidate))
        throw usage_error("option --candidate '" + req.candidate.string() + "': no such file");
    const fs::path candidate = fs::absolute(req.candidate).lexically_normal();
    const auto repo = platform::git_state_of(candidate.parent_path(), runner);
    const fs::path root = req.workspace ? fs::absolute(*req.workspace).lexically_normal()
                                        : default_workspace_root(repo, candidate.parent_path(), spec.name);
    const workspace ws(root);
    if (fs::exists(ws.contract_file()))
        throw usage_error(fmt::format("workspace '{}' already holds a loop (contract.json); continue it with `kloop "
                                      "iterate`, or pass --workspace to start another",
                                      root.string()));
    refuse_foreign_content(root);
    const bool created_root = !fs::exists(root);
    // Validates the cap and the target before spending time on the baseline.
    contract_inputs ci{spec, candidate, req.max_iterations, req.target_speedup, platform::cpu_model(), repo.commit, repo.dirty};
    auto c = make_contract(ci);
    out.workspace = root;

    // The lock first: a second init on this path is refused here, with this one's pid, before
    // either writes anything. Holding it also proves that leftovers of an init are a dead one's.
    auto lock = std::make_unique<workspace_lock>(ws);
    if (fs::exists(ws.contract_file()))
        throw usage_error(fmt::format("workspace '{}' already holds a loop (contract.json); continue it with `kloop "
                                      "iterate`, or pass --workspace to start another",
                                      root.string()));
    refuse_foreign_content(root);
    if (remove_dead_init_leftovers(ws))
        out.notes.push_back("removed what a killed `kloop init` had left in the workspace");
    // Not green: nothing stays behind but what was there before.
    auto remove_own_lock = [&] {
        if (!created_root) return;
        std::error_code ec;
        fs::remove(ws.lock_file(), ec);
        fs::remove_all(ws.state_dir(), ec);
        fs::remove(root, ec);
    };
    if (!spec.blackbox && !spec.has_domain())
        out.notes.push_back("warning: op.toml declares no domain ([dims] domain, param_domain): the gate tries only the "
                            "listed shapes and param values, so a candidate that hard-codes them passes; declare one "
                            "(docs/spec.md, \"Domains and held-out shapes\")");

    // The repository as the loop will see it, before the baseline runs: a black-box gate's result
    // is reused only for the same bytes (backend/blackbox/gate_reuse), and .gitignore is one of
    // them. Put back as it was when no loop comes of this init.
    struct gitignore_guard {
        fs::path file;
        std::optional<std::string> before;  // nothing: there was no .gitignore
        bool keep = false;
        ~gitignore_guard() {
            if (keep || file.empty()) return;
            std::error_code ec;
            if (before) platform::write_file_atomic(file, *before);
            else fs::remove(file, ec);
        }
    } gitignore;
    std::string gitignore_note;
    if (repo.available) {
        gitignore.file = fs::path(repo.toplevel) / ".gitignore";
        if (fs::exists(gitignore.file)) gitignore.before = platform::read_file(gitignore.file);
        gitignore_note = ignore_workspace(root, repo.toplevel);
    }

    // The baseline: a plain evaluation, in a scratch directory.
    platform::ensure_directory(root.parent_path());
    platform::scoped_temp_dir scratch("kloop-init");
    // The snapshot in a folder of its own: the scratch folder also holds the runner's job, and a
    // Python candidate host may read the modules beside its source only where no such file is.
    const fs::path snapshot = scratch.path() / "candidate" / candidate.filename();
    // Evaluate the parsed contract spec (same text as op.toml) so v0 is measured as later iterations are.
    const auto cspec = load_spec(c);
    const auto sources = eval::candidate_sources(cspec, candidate);  // the candidate and its local files
    backend::copy_local_sources(sources, snapshot.parent_path());
    eval::evaluation_context ctx{cspec, snapshot, contract_options(c, req.options), runner, platform::cache_dir(),
                                 scratch.path()};
    ctx.state_dir = ws.state_dir();  // black-box ops: v0's green gate is stored, so iteration 1 reuses it
    out.baseline = eval::evaluate(ctx);
    out.baseline.candidate = candidate.string();
    // The snapshot was evaluated outside the repository; the environment names the real one.
    out.baseline.env.git_available = repo.available;
    out.baseline.env.git_commit = repo.commit;
    out.baseline.env.git_dirty = repo.dirty;
    out.baseline.command_line = req.command_line;
    if (out.baseline.status != eval::disposition::passed || !out.baseline.bench.ok) {
        remove_own_lock();
        return out;
    }
    fault_point("init.after_baseline");

    iteration_record v0;
    v0.number = 0;
    v0.status = iteration_status::baseline;
    v0.reason = "baseline";
    v0.candidate_source = candidate.string();
    v0.candidate_file = candidate.filename().string();
    v0.candidate_sha256 = platform::sha256_file(snapshot);
    for (std::size_t k = 1; k < sources.files.size(); ++k) v0.local_files.push_back(sources.files[k].generic_string());
    v0.sources_sha256 = backend::local_sources_sha256(sources);
    c.baseline_local_files = v0.local_files;
    c.baseline_sources_sha256 = v0.sources_sha256;
    v0.gate_pass = out.baseline.gate.pass;
    v0.gate_partial = out.baseline.gate.partial;
    v0.bench_ok = out.baseline.bench.ok;
    v0.bench = bench_stats_of(out.baseline);
    v0.git.in_repo = repo.available;
    v0.git.commit = repo.commit;
    v0.git.note = repo.available ? fmt::format("baseline = repository HEAD {}{}", repo.commit, repo.dirty ? " (dirty)" : "")
                                 : "the candidate is not in a git repository";
    v0.recorded_at = platform::utc_now_iso8601();

    // Assemble everything in a staging directory inside the workspace (under the lock), then move
    // it into place with contract.json last: the workspace exists once contract.json does.
    const fs::path staging = ws.make_staging_dir("init");
    const workspace st(staging);
    const record_origin origin{req.command_line, repo};
    write_record(st.contract_file(), "kloop.contract", to_json(c, root), origin);
    platform::write_file_atomic(st.draft_file(), report::draft_md({c, spec, root}));
    platform::write_file_atomic(st.traps_file(), report::traps_md());
    platform::write_file_atomic(st.dispatch_file(), report::dispatch_header(c.op));
    const fs::path v0dir = st.iteration_dir(0);
    platform::ensure_directory(v0dir);
    backend::copy_local_sources(sources, v0dir);
    if (auto note = profile_version(v0, cspec, v0dir / v0.candidate_file, out.baseline.census_kernels, v0dir,
                                    contract_options(c, req.options), req.profile, runner);
        !note.empty())
        out.notes.push_back(note);
    platform::write_file_atomic(st.opt_log_file(), report::opt_log_header(c, v0, report::environment_line(out.baseline.env)) + report::opt_log_row(v0));
    json body = {{"iteration", to_json(v0)}, {"evaluation", report::to_json(out.baseline)}};
    write_record(v0dir / "benchmark_result.json", "kloop.iteration", body, origin);
    platform::write_file_atomic(v0dir / "iteration_summary.md", report::iteration_summary_md(v0, c.op));
    fault_point("init.before_rename");
    std::vector<fs::path> parts;
    for (const auto& e : fs::directory_iterator(staging))
        if (e.path().filename() != "contract.json") parts.push_back(e.path());
    for (const auto& p : parts) fs::rename(p, root / p.filename());
    fs::rename(st.contract_file(), ws.contract_file());
    fs::remove(staging);
    fault_point("init.after_rename");
    out.created = true;

    gitignore.keep = true;
    if (!gitignore_note.empty()) out.notes.push_back(gitignore_note);
    auto session = open_session(root, access::write, origin, std::move(lock));
    strategy_memory memory(req.memory_db);
    reconcile_memory(session, memory);
    write_manifest(session, req.memory_db);
    return out;
}

}  // namespace kloop::loop
