// kloop loop: a parallel round's evaluations as one Slurm job array (see sibling_slurm.hpp).
#include "loop/sibling_slurm.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "backend/local_sources.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "eval/evaluator.hpp"
#include "loop/evaluation_marker.hpp"
#include "loop/workspace.hpp"
#include "platform/paths.hpp"

namespace kloop::loop {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* k_task_kind = "kloop.sibling_task";
constexpr const char* k_evaluated_kind = "kloop.sibling_evaluated";
constexpr const char* k_task_file = "task.json";
constexpr const char* k_evaluated_file = "evaluated.json";

// The same sibling: the number it was staged with, its sources and the version it races.
bool same_sibling(const iteration_record& a, const iteration_record& b) {
    return a.number == b.number && a.sources_sha256 == b.sources_sha256 && a.vs_best == b.vs_best &&
           a.candidate_file == b.candidate_file;
}

// Every regular file under `from` copied to the same relative path under `to`; with
// `keep_existing`, a file `to` holds already is left as it is.
void copy_tree(const fs::path& from, const fs::path& to, bool keep_existing) {
    for (const auto& e : fs::recursive_directory_iterator(from)) {
        if (!e.is_regular_file()) continue;
        const fs::path dest = to / e.path().lexically_relative(from);
        if (keep_existing && fs::exists(dest)) continue;
        fs::create_directories(dest.parent_path());
        fs::copy_file(e.path(), dest, fs::copy_options::overwrite_existing);
    }
}

// The task's inputs; a resumed run finds them written (a job may be reading them) and only checks
// that they are this sibling's.
void write_task(const fs::path& dir, const staged_iteration& it, const loop_session& s) {
    const fs::path task = dir / k_task_file;
    if (fs::exists(task)) {
        iteration_record there;
        try {
            there = iteration_record_from_json(read_record(task, k_task_kind).at("record"));
        } catch (const std::exception& e) {
            throw usage_error(fmt::format("option --slurm: '{}' is not a task kloop can read ({}): use an empty directory",
                                          task.string(), e.what()));
        }
        if (!same_sibling(there, it.record))
            throw usage_error(fmt::format("option --slurm: '{}' holds another run's task ({} of sources {}…, not {} of "
                                          "{}…): use an empty directory",
                                          dir.string(), version_label(there.number), there.sources_sha256.substr(0, 12),
                                          version_label(it.record.number), it.record.sources_sha256.substr(0, 12)));
        return;
    }
    fs::remove_all(dir);
    copy_tree(it.staging, dir / "candidate", false);
    const auto& best = s.records[static_cast<std::size_t>(it.record.vs_best)];
    backend::local_sources best_sources{s.ws.iteration_dir(it.record.vs_best), {best.candidate_file}};
    for (const auto& f : best.local_files) best_sources.files.emplace_back(f);
    backend::copy_local_sources(best_sources, dir / "best");
    write_record(task, k_task_kind,
                 {{"workspace_root", s.ws.root().string()},
                  {"contract", to_json(s.c, s.ws.root())},
                  {"record", to_json(it.record)},
                  {"candidate", it.candidate.string()},
                  {"best_file", best.candidate_file}},
                 s.origin);
}

// The tail of a task's output, for a reason.
std::string output_of(const platform::slurm_task_result& t) {
    const std::string tail = trimmed(t.output_tail);
    return tail.empty() ? std::string("its output is empty") : "its output ends: " + tail;
}

}  // namespace

void evaluate_siblings_on_slurm(std::vector<staged_iteration>& staged, const std::vector<int>& attempts, int round,
                                const loop_session& session,
                                const sibling_slurm_engine& engine, platform::command_runner_base& commands) {
    const fs::path round_dir = engine.options.state_dir / fmt::format("round-{}", round);
    std::vector<fs::path> dirs;
    std::vector<platform::slurm_task> tasks;
    for (std::size_t j = 0; j < staged.size(); ++j) {
        dirs.push_back(round_dir / fmt::format("attempt-{:03}", attempts[j]));
        write_task(dirs[j], staged[j], session);
        platform::slurm_task t;
        t.record = dirs[j] / k_evaluated_file;
        t.argv = {platform::self_exe_path().string(), "evaluate-sibling", dirs[j].string()};
        t.argv.insert(t.argv.end(), engine.forwarded.begin(), engine.forwarded.end());
        tasks.push_back(std::move(t));
    }
    // One array per set of siblings: a run resumed after some of them were recorded submits the rest
    // under their own name, and the same set finds its earlier job.
    auto options = engine.options;
    options.state_dir = round_dir / fmt::format("array-{}", fmt::join(attempts, "-"));
    const auto out = platform::run_slurm_array(tasks, options, commands);
    if (out.resumed && engine.on_resume) engine.on_resume(out.job_ids.front());

    for (std::size_t j = 0; j < staged.size(); ++j) {
        auto& it = staged[j];
        const auto& t = out.tasks[j];
        const std::string device = (t.device.empty() ? std::string("no GPU") : t.device) + (t.host.empty() ? "" : " on " + t.host);
        if (!t.done) {
            // The candidate was running when the task ended: rejected, as a local evaluation whose
            // kloop died is. Otherwise the task never got to it (the node's kloop, op or filesystem):
            // the run stops and the same command resumes.
            if (fs::exists(dirs[j] / "candidate" / evaluation_marker_name)) {
                reject_as_died(it.record, fmt::format("its Slurm task ended while the candidate ran ({}; {})", device,
                                                      output_of(t)));
                it.record.device = device;
                it.notes.push_back(fmt::format("Slurm job {}: task {} ended while the candidate ran", out.job_ids.back(), j));
                continue;
            }
            throw error(exit_code::gate_red,
                        fmt::format("the Slurm task evaluating {} (attempt {}, {}) wrote no record, {}. The same command "
                                    "resumes the run from its directory",
                                    version_label(it.record.number), attempts[j], device, output_of(t)));
        }
        json done;
        iteration_record r;
        try {
            done = read_record(tasks[j].record, k_evaluated_kind);
            r = iteration_record_from_json(done.at("record"));
        } catch (const std::exception& e) {
            throw usage_error(fmt::format("option --slurm: the record '{}' cannot be read: {}", tasks[j].record.string(),
                                          e.what()));
        }
        if (!same_sibling(r, it.record))
            throw usage_error(fmt::format("option --slurm: '{}' is the record of {} of sources {}…, not of {}: use an "
                                          "empty directory",
                                          tasks[j].record.string(), version_label(r.number), r.sources_sha256.substr(0, 12),
                                          version_label(it.record.number)));
        it.record = std::move(r);
        it.record.device = device;
        it.evaluation = done.value("evaluation", json::object());
        it.ab = done.value("ab", json::object());
        if (it.ab.is_object()) {
            it.ab["device"] = t.device;
            it.ab["device_host"] = t.host;
        }
        for (const auto& n : done.value("notes", json::array()))
            if (n.is_string()) it.notes.push_back(n.get<std::string>());
        // What the node wrote beside the sources: the profile summaries and the ncu reports.
        copy_tree(dirs[j] / "candidate", it.staging, true);
    }
}

void evaluate_sibling_task(const fs::path& task_dir, const iterate_request& req, platform::command_runner_base& runner) {
    const fs::path task_file = task_dir / k_task_file;
    const json task = read_record(task_file, k_task_kind);
    staged_iteration it;
    contract c;
    try {
        const fs::path root = task.at("workspace_root").get<std::string>();
        c = contract_from_json(task.at("contract"), root);
        it.record = iteration_record_from_json(task.at("record"));
        it.candidate = task.at("candidate").get<std::string>();
        it.best_source = task_dir / "best" / task.at("best_file").get<std::string>();
    } catch (const json::exception& e) {
        throw usage_error(fmt::format("'{}': {}", task_file.string(), e.what()));
    }
    verify_contract(c);  // the node's op files are the ones the loop froze
    it.staging = task_dir / "candidate";
    it.spec = std::make_shared<spec::op_spec>(load_spec(c));
    it.sources = eval::candidate_sources(*it.spec, it.staging / it.record.candidate_file);
    evaluate_staged(it, c, task_dir / "state", req, runner);
    write_record(task_dir / k_evaluated_file, k_evaluated_kind,
                 {{"record", to_json(it.record)}, {"evaluation", it.evaluation}, {"ab", it.ab}, {"notes", it.notes}},
                 record_origin{req.command_line, {}});
}

}  // namespace kloop::loop
