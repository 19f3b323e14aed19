// kloop cli: `kloop tune [--workspace DIR] [--candidate FILE] [--budget N] [--search KIND] [--devices D | --slurm DIR]` — a
// parameter search over the candidate's tunables (its `kloop:tune` markers), each point gated and
// raced against the incumbent, ending in one iteration of the loop with the chosen values.
#include "cli/tune_command.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <ostream>

#include <fmt/format.h>

#include "cli/forwarded_options.hpp"
#include "cli/iterate_command.hpp"
#include "cli/loop_options.hpp"
#include "cli/progress_display.hpp"
#include "cli/slurm_options.hpp"
#include "cli/timing_options.hpp"
#include "loop/tune.hpp"
#include "platform/slurm_array.hpp"
#include "platform/subprocess.hpp"
#include "report/tune_table.hpp"

namespace kloop::cli {

namespace fs = std::filesystem;

namespace {

struct tune_config_options {
    std::string workspace;
    std::string candidate;
    std::string search = "auto";
    std::string devices = "1";
    std::string slurm_dir;                 // --slurm DIR
    platform::slurm_options slurm;         // --slurm-gres, --slurm-partition, --slurm-time, --slurm-arg
    int slurm_batch = 4;                   // --slurm-batch
    int budget = 24;
    bool allow_unconfined = false;
    bool require_quiet = false;
    eval::evaluation_options options;
    measure::ab_config ab;
};

// One line per decided point: "#2 BLOCK=512, WARPS=4: green, x1.120 [1.050, 1.200] FASTER → incumbent".
std::string point_line(const loop::tune_point& p) {
    std::string s = fmt::format("#{} {}: ", p.index, p.label);
    switch (p.status) {
        case loop::tune_point_status::start: return s + "start (the declared values)";
        case loop::tune_point_status::duplicate: return s + "skipped — " + p.reason;
        case loop::tune_point_status::build_failed: return s + "build failed — " + p.reason;
        case loop::tune_point_status::red: return s + "gate red — " + p.reason;
        case loop::tune_point_status::faster:
        case loop::tune_point_status::not_faster: break;
    }
    s += "green, ";
    s += p.verdict ? report::speedup_text(*p.verdict) + " " + measure::to_string(p.verdict->verdict) : p.reason;
    s += " vs " + p.incumbent;
    if (p.became_incumbent) s += " → incumbent";
    else if (p.status == loop::tune_point_status::faster) s += " (a point of its batch was faster still)";
    if (!p.device.empty()) s += " | on " + p.device;
    return s;
}

class tune_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        add_workspace_option(sub, m_cfg.workspace);
        sub.add_option("--candidate", m_cfg.candidate,
                       "The candidate source with its `kloop:tune` markers (default: the kernel file given to `kloop "
                       "init`); the chosen configuration is written over it")
            ->check(CLI::ExistingFile);
        sub.add_option("--budget", m_cfg.budget,
                       "Configurations to visit at most, the declared one included; a space this small or smaller is "
                       "searched exhaustively")
            ->check(CLI::Range(1, 100000))
            ->capture_default_str();
        sub.add_option("--search", m_cfg.search,
                       "auto: exhaustive when the space has at most --budget points, else coordinate; exhaustive: every "
                       "point in order (the first --budget); coordinate: coordinate descent from the declared values")
            ->check(CLI::IsMember({"auto", "exhaustive", "coordinate"}))
            ->capture_default_str();
        add_devices_option(sub, m_cfg.devices, "Race points on several GPUs at once, one race per GPU");
        add_slurm_options(sub, m_cfg.slurm_dir, m_cfg.slurm,
                          "Race each batch of points as a Slurm job array (sbatch, one GPU per task); DIR is shared with "
                          "the nodes, holds the batches' sources, scripts and records, and the same DIR again resumes");
        sub.get_option("--slurm")->excludes("--devices");
        sub.add_option("--slurm-batch", m_cfg.slurm_batch, "With --slurm: points raced at once, one job array per batch")
            ->check(CLI::Range(1, 10000))
            ->capture_default_str();
        add_bench_options(sub, m_cfg.options);
        add_profile_options(sub, m_profile);
        add_min_effect_options(sub, m_cfg.ab);
        sub.add_flag("--allow-unconfined", m_cfg.allow_unconfined,
                     "Promote a FASTER end iteration that ran unconfined, as `kloop iterate --allow-unconfined` does");
        add_require_quiet_option(sub, m_cfg.require_quiet,
                                 "the end iteration, FASTER but timed on a busy machine, is not promoted");
    }

    int do_execute(const invocation& inv) override {
        platform::posix_command_runner runner;
        loop::tune_request req;
        req.workspace = resolve_workspace(m_cfg.workspace, runner);
        if (!m_cfg.candidate.empty()) req.candidate = m_cfg.candidate;
        req.search.kind = loop::search_kind_from_string(m_cfg.search);
        req.search.budget = m_cfg.budget;
        req.devices = m_cfg.devices;
        if (!m_cfg.slurm_dir.empty()) {
            loop::tune_slurm_engine engine;
            engine.options = m_cfg.slurm;
            engine.options.state_dir = fs::absolute(m_cfg.slurm_dir);
            engine.batch = static_cast<std::size_t>(m_cfg.slurm_batch);
            // What a race's `kloop compare` takes of this command line: the timing and verdict options.
            std::vector<std::string> drop = {"--workspace", "--candidate",   "--budget",         "--search",
                                             "--devices",   "--slurm-batch", "--profile-timeout"};
            drop.insert(drop.end(), k_slurm_option_names.begin(), k_slurm_option_names.end());
            engine.forwarded =
                forwarded_options(inv.argv, "tune", "", drop, {"--allow-unconfined", "--require-quiet", "--no-profile"});
            engine.on_resume = [&](const std::string& job) { inv.out << "note: resumed Slurm job " << job << "\n" << std::flush; };
            req.slurm = std::move(engine);
        }
        req.options = m_cfg.options;
        req.ab = m_cfg.ab;
        req.command_line = inv.argv;
        req.memory_db = memory_db_path();
        req.profile = m_profile;
        req.allow_unconfined = m_cfg.allow_unconfined;
        req.require_quiet = m_cfg.require_quiet;
        progress_display progress(inv.err, false);
        req.options.progress = progress.sink();
        req.on_point = [&](const loop::tune_point& p) {
            progress.finish();
            inv.out << point_line(p) << "\n" << std::flush;
        };
        const auto out = loop::run_tune(req, runner);
        progress.finish();
        const auto& s = out.search;
        inv.out << fmt::format("\ntune: {} search, {} of {} points ({}); chose {}\n", s.search, s.points.size(),
                               s.space_size, s.stop_reason, s.best == s.start ? "the start, " + s.best_label : s.best_label);
        if (s.best != s.start && s.best_vs_start)
            inv.out << fmt::format("  vs the start: {} {}\n", report::speedup_text(*s.best_vs_start),
                                   measure::to_string(s.best_vs_start->verdict));
        inv.out << "\n" << report::tune_points_table(s) << "\n";
        inv.out << "table: " << out.table.string() << "\n";
        print_iteration_outcome(out.iteration, inv.out, inv.err);
        return 0;
    }

private:
    tune_config_options m_cfg;
    loop::profile_options m_profile;
};

}  // namespace

std::unique_ptr<command_base> make_tune_command() { return std::make_unique<tune_command>(); }

}  // namespace kloop::cli
