// kloop cli: `kloop noise <op-dir> --candidate FILE [--runs N] [--devices D | --slurm DIR] [--json] ...`
//
// The candidate is built and gated once (as both sides of an A/B), then timed against itself in
// N fresh A/B runner processes (the same library on both sides, new input values each run).
// With --devices the runs after the first are spread over the GPUs (platform/device_pool: one
// run per GPU at a time, each run's record naming its GPU); with --slurm each run is a task of a
// Slurm job array (platform/slurm_array: `kloop compare` of the candidate against itself, one
// GPU each), gathered from the state directory, resumable after a kill.
// Every FASTER or SLOWER verdict is false by construction: measure/noise_floor gathers, per
// shape, how far the measured ratio strays from 1 and the share of false verdicts (held under
// 5 % at the chosen minimum effect); report/noise_report prints and records it.
#include "cli/noise_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <mutex>
#include <optional>
#include <ostream>


#include "cli/compare_command.hpp"
#include "cli/forwarded_options.hpp"
#include "cli/progress_display.hpp"
#include "cli/slurm_options.hpp"
#include "cli/timing_options.hpp"
#include "core/error.hpp"
#include "eval/visible_devices.hpp"
#include "loop/report_page.hpp"
#include "platform/device_pool.hpp"
#include "platform/slurm_array.hpp"
#include "measure/noise_floor.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"
#include "platform/subprocess.hpp"
#include "report/ab_text.hpp"
#include "report/noise_report.hpp"
#include "spec/spec_loader.hpp"

namespace kloop::cli {

namespace fs = std::filesystem;

namespace {

std::string load_average() {
    std::ifstream in("/proc/loadavg");
    std::string a, b, c;
    if (!(in >> a >> b >> c)) return "unknown";
    return a + " " + b + " " + c;
}

struct noise_config {
    std::string op_dir;
    std::string candidate;
    int runs = 10;
    bool json = false;
    std::string json_out;
    std::string keep_dir;
    eval::evaluation_options options;
    measure::ab_config ab;
    bool require_quiet = false;            // --require-quiet
    std::string devices = "1";             // --devices
    std::string slurm_dir;                 // --slurm DIR
    platform::slurm_options slurm;         // --slurm-gres, --slurm-partition, --slurm-time, --slurm-arg
};

// The noise command line without what only the whole measurement takes: what a `kloop compare`
// of one run takes from it (the timing and verdict options). `op_dir` is the positional argument
// as given.
std::vector<std::string> per_run_options(const std::vector<std::string>& argv, const std::string& op_dir) {
    std::vector<std::string> drop = {"--candidate", "--runs", "--json-out", "--keep", "--devices"};
    drop.insert(drop.end(), k_slurm_option_names.begin(), k_slurm_option_names.end());
    return forwarded_options(argv, "noise", op_dir, drop, {"--json", "--require-quiet"});
}

class noise_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        sub.add_option("op-dir", m_cfg.op_dir, "Op directory holding op.toml (or the op.toml itself)")->required();
        sub.add_option("--candidate", m_cfg.candidate,
                       "The version timed against itself (built and gated once; both sides load the same library)")
            ->required();
        sub.add_option("--runs", m_cfg.runs,
                       "How many A/B runs, each in a fresh runner process with new input values")
            ->check(CLI::Range(1, 10000))
            ->capture_default_str();
        sub.add_flag("--json", m_cfg.json, "Print the JSON record (schema kloop.noise) instead of the text report");
        sub.add_option("--json-out", m_cfg.json_out, "Also write the JSON record to this file");
        add_min_effect_options(sub, m_cfg.ab);
        declare_ab_timing_options(sub, m_cfg.options);
        sub.add_option("--keep", m_cfg.keep_dir, "Keep the runners' jobs, events and logs (of the last run) here");
        add_require_quiet_option(sub, m_cfg.require_quiet, "exit 2 after the report");
        add_devices_option(sub, m_cfg.devices, "Spread the runs over GPUs, one run per GPU at a time");
        add_slurm_options(sub, m_cfg.slurm_dir, m_cfg.slurm,
                          "Run each run as a task of a Slurm job array (one GPU each); DIR, shared with the compute "
                          "nodes, holds the scripts, records and job id, and the same DIR again resumes");
    }

    int do_execute(const invocation& inv) override {
        auto& c = m_cfg;
        const auto spec = spec::load_op_spec(c.op_dir);
        if (!fs::exists(c.candidate)) throw usage_error("option --candidate '" + c.candidate + "': no such file");
        const std::string load_before = load_average();

        platform::posix_command_runner commands;
        std::optional<platform::scoped_temp_dir> scratch;
        fs::path scratch_dir;
        if (!c.keep_dir.empty()) {
            scratch_dir = fs::absolute(c.keep_dir);
            platform::ensure_directory(scratch_dir);
        } else {
            scratch.emplace("kloop-noise");
            scratch_dir = scratch->path();
        }
        progress_display display(inv.err, c.json);
        c.options.progress = display.sink();
        const fs::path cand = fs::absolute(c.candidate);
        if (!c.slurm_dir.empty()) return execute_slurm(inv, spec, cand, load_before, display, commands);
        const auto slots = eval::visible_devices(spec, c.devices, commands);
        platform::device_bound_runner first_runner(commands, slots.front());
        const eval::ab_context ctx{spec, cand, cand, c.options, c.ab, first_runner, platform::cache_dir(), scratch_dir};

        std::vector<eval::ab_evaluation> runs(static_cast<std::size_t>(c.runs));
        runs.front() = eval::compare_candidates(ctx);
        auto& first = runs.front();
        first.device = slots.front().id;
        first.base_label = first.candidate_label = c.candidate;
        first.command_line = inv.argv;
        display.finish();
        if (!first.timed) {
            if (c.json) inv.out << report::noise_not_timed_json(first.reason).dump(2) << "\n";
            else inv.out << report::to_text(first);
            return compare_exit_code(first);
        }
        if (!c.json) inv.out << report::noise_header(spec.name, c.candidate, c.runs, first);
        auto print_run = [&](int i, const eval::ab_evaluation& r) {
            display.finish();
            if (!c.json) inv.out << report::noise_run_line(i, c.runs, r) << std::flush;
        };
        print_run(0, first);
        // Runs 1..N-1: one per device at a time (a single unbound slot: one after the other, as always).
        std::mutex print_mutex;
        platform::run_on_devices(slots, static_cast<std::size_t>(c.runs - 1), commands,
                                 [&](std::size_t k, const platform::device_slot& slot, platform::command_runner_base& runner) {
                                     const int i = static_cast<int>(k) + 1;
                                     auto options = c.options;
                                     if (slots.size() > 1) options.progress = {};  // one display, many threads
                                     // Its own scratch: a runner's job and events files are per directory.
                                     const fs::path run_dir = slots.size() > 1 ? scratch_dir / fmt::format("run-{}", i) : scratch_dir;
                                     platform::ensure_directory(run_dir);
                                     const eval::ab_context cj{spec, cand, cand, options, c.ab, runner, platform::cache_dir(), run_dir};
                                     auto r = eval::retime_candidates(cj, first, i);
                                     r.device = slot.id;
                                     const std::lock_guard<std::mutex> lock(print_mutex);
                                     runs[static_cast<std::size_t>(i)] = std::move(r);
                                     print_run(i, runs[static_cast<std::size_t>(i)]);
                                 });
        return finish(inv, spec, runs, load_before, "local", {});
    }

    // The record, the report and the exit code from every run (in run order).
    int finish(const invocation& inv, const spec::op_spec& spec, const std::vector<eval::ab_evaluation>& runs,
               const std::string& load_before, const std::string& engine, const std::vector<std::string>& jobs) {
        auto& c = m_cfg;
        const auto& first = runs.front();

        // Per shape, across runs (the shapes come in the same order every run): measure/noise_floor.
        report::noise_record rec;
        rec.op = spec.name;
        rec.candidate = c.candidate;
        rec.command_line = inv.argv;
        rec.env = first.env;
        rec.load_before = load_before;
        rec.load_after = load_average();
        rec.runs = c.runs;
        rec.ab = c.ab;
        rec.stop = c.options.stop;
        rec.ok = true;
        std::vector<measure::noise_run> timed;
        for (const auto& r : runs) {
            rec.host_load = platform::combined(rec.host_load, r.host_load);
            rec.busy_runs += r.host_load.busy() ? 1 : 0;
            rec.ok = rec.ok && r.ok;
            if (!r.ok && rec.reason.empty()) rec.reason = r.reason.empty() ? "a run did not complete" : r.reason;
            measure::noise_run run;
            run.overall = r.overall;
            for (const auto& s : r.shapes)
                run.shapes.push_back({s.mode, s.shape, s.ok ? s.verdict : std::nullopt});
            timed.push_back(std::move(run));
        }
        rec.summary = measure::summarize_noise(timed);
        rec.engine = engine;
        rec.slurm_jobs = jobs;
        for (const auto& r : runs) rec.run_devices.push_back(r.device + (r.device_host.empty() ? "" : " on " + r.device_host));
        if (rec.busy_runs > 0)
            rec.warnings = measure::busy_machine_warning(
                true, fmt::format("{} of {} runs: {}", rec.busy_runs, c.runs, rec.host_load.describe()));
        const auto record = report::to_json(rec);
        if (!c.json_out.empty()) platform::write_file_atomic(c.json_out, record.dump(2) + "\n");
        if (c.json) inv.out << record.dump(2) << "\n";
        else inv.out << report::to_text(rec);
        const int rc = rec.ok ? static_cast<int>(exit_code::success) : static_cast<int>(exit_code::gate_red);
        // A busy run refuses the whole measurement under --require-quiet (named by that run's load).
        const auto busy = std::find_if(runs.begin(), runs.end(), [](const auto& r) { return r.host_load.busy(); });
        return busy == runs.end() ? rc : refuse_busy(c.require_quiet, busy->host_load, inv.err, rc);
    }

    // --slurm DIR: every run a task `kloop compare OP --base C --candidate C --json-out DIR/run-I.json`.
    int execute_slurm(const invocation& inv, const spec::op_spec& spec, const fs::path& cand, const std::string& load_before,
                      progress_display& display, platform::command_runner_base& commands) {
        auto& c = m_cfg;
        if (c.devices != "1") throw usage_error("options --slurm and --devices exclude each other: Slurm places the runs");
        c.slurm.state_dir = fs::absolute(c.slurm_dir);
        const auto forwarded = per_run_options(inv.argv, c.op_dir);
        std::vector<platform::slurm_task> tasks;
        for (int i = 0; i < c.runs; ++i) {
            platform::slurm_task t;
            t.record = c.slurm.state_dir / fmt::format("run-{}.json", i);
            t.argv = {platform::self_exe_path().string(), "compare", spec.spec_file.string(), "--base", cand.string(),
                      "--candidate", cand.string(), "--json-out", t.record.string()};
            t.argv.insert(t.argv.end(), forwarded.begin(), forwarded.end());
            tasks.push_back(std::move(t));
        }
        display.finish();
        if (!c.json)
            inv.out << fmt::format("kloop noise {} | {} against itself, {} runs as Slurm array tasks in {}\n", spec.name,
                                   c.candidate, c.runs, c.slurm.state_dir.string())
                    << std::flush;
        const auto out = platform::run_slurm_array(tasks, c.slurm, commands);
        std::vector<eval::ab_evaluation> runs;
        for (std::size_t i = 0; i < tasks.size(); ++i) {
            eval::ab_evaluation r;
            if (out.tasks[i].done) {
                r = loop::ab_from_json(nlohmann::json::parse(platform::read_file(tasks[i].record)));
            } else {
                r.reason = "Slurm task " + std::to_string(i) + " wrote no record: " + out.tasks[i].output_tail;
            }
            r.device = out.tasks[i].device;
            r.device_host = out.tasks[i].host;
            if (!c.json) inv.out << report::noise_run_line(static_cast<int>(i), c.runs, r);
            runs.push_back(std::move(r));
        }
        if (out.resumed && !c.json) inv.out << "note: resumed Slurm job " << out.job_ids.front() << "\n";
        return finish(inv, spec, runs, load_before, "slurm", out.job_ids);
    }

private:
    noise_config m_cfg;
};

}  // namespace

std::unique_ptr<command_base> make_noise_command() { return std::make_unique<noise_command>(); }

}  // namespace kloop::cli
