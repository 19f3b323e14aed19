// kloop cli: `kloop run [--workspace DIR] --proposer CMD [--iterations N] [--parallel N [--devices D | --slurm DIR]]`
// — the loop, unattended: a proposer writes each candidate and its proposal, kloop gates, times,
// classifies and records it, until a stop rule (loop/run_driver, docs/agents.md); with
// --parallel, rounds of proposers at once, their candidates raced on the device pool or as the
// tasks of a Slurm job array.
#include "cli/run_command.hpp"

#include <CLI/CLI.hpp>

#include <ostream>

#include "cli/forwarded_options.hpp"
#include "cli/loop_options.hpp"
#include "cli/progress_display.hpp"
#include "cli/slurm_options.hpp"
#include "core/error.hpp"
#include "loop/run_driver.hpp"
#include "platform/subprocess.hpp"

namespace kloop::cli {

namespace {

namespace fs = std::filesystem;

class run_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        add_workspace_option(sub, m_workspace);
        sub.add_option("--proposer", m_req.proposer,
                       "The proposer: a shell command (an agent CLI, a script) run in the kernel's directory before each "
                       "iteration; it edits the kernel file and writes $KLOOP_PROPOSAL (docs/agents.md)")
            ->required();
        sub.add_option("--iterations", m_iterations,
                       "Iterations this run records at most (default: until the contract's cap or another stop rule)")
            ->check(CLI::PositiveNumber);
        sub.add_option("--max-stall", m_req.max_stall, "End the run after this many iterations without improvement")
            ->check(CLI::PositiveNumber)
            ->capture_default_str();
        sub.add_option("--max-failures", m_req.max_failures,
                       "End the run (exit 7) after this many failed or refused attempts in a row")
            ->check(CLI::PositiveNumber)
            ->capture_default_str();
        sub.add_option("--proposer-timeout", m_req.proposer_timeout_s,
                       "Wall-clock limit per proposer run, seconds; past it its process group is killed and the attempt fails")
            ->check(CLI::Range(1.0, 1e6))
            ->capture_default_str();
        sub.add_option("--parallel", m_req.parallel,
                       "Proposers per round, run at once, each in its own copy of the kernel's directory; their candidates "
                       "race against the same best and the fastest is promoted (docs/agents.md)")
            ->check(CLI::Range(1, 64))
            ->capture_default_str();
        add_devices_option(sub, m_req.devices,
                           "With --parallel: spread a round's evaluations over GPUs, one A/B per GPU at a time");
        add_slurm_options(sub, m_slurm_dir, m_slurm,
                          "With --parallel: evaluate each round's siblings as a Slurm job array (sbatch, one GPU per "
                          "task), each on its node as here; DIR is shared with the nodes, holds the tasks' sources, "
                          "scripts and records, and the same DIR again resumes");
        sub.get_option("--slurm")->excludes("--devices");
        add_iteration_options(sub, m_req.iterate);
    }

    int do_execute(const invocation& inv) override {
        platform::posix_command_runner runner;
        m_req.iterate.workspace = resolve_workspace(m_workspace, runner);
        m_req.iterate.command_line = inv.argv;
        m_req.iterate.memory_db = memory_db_path();
        if (m_iterations > 0) m_req.iterations = m_iterations;
        if (m_req.devices != "1" && m_req.parallel < 2)
            throw usage_error("option --devices spreads the evaluations of a --parallel round: give --parallel N (N >= 2)");
        if (!m_slurm_dir.empty()) {
            if (m_req.parallel < 2)
                throw usage_error("option --slurm runs the evaluations of a --parallel round as a job array: give "
                                  "--parallel N (N >= 2)");
            loop::sibling_slurm_engine engine;
            engine.options = m_slurm;
            engine.options.state_dir = fs::absolute(m_slurm_dir);
            // What each task's `kloop evaluate-sibling` takes of this command line: the iteration's options.
            std::vector<std::string> drop = {"--workspace", "--proposer",         "--iterations", "--max-stall",
                                             "--max-failures", "--proposer-timeout", "--parallel",   "--devices"};
            drop.insert(drop.end(), k_slurm_option_names.begin(), k_slurm_option_names.end());
            engine.forwarded = forwarded_options(inv.argv, "run", "", drop, {});
            engine.on_resume = [&](const std::string& job) { inv.out << "note: resumed Slurm job " << job << "\n" << std::flush; };
            m_req.slurm = std::move(engine);
        }
        progress_display progress(inv.err, false);
        m_req.iterate.options.progress = progress.sink();
        const auto out = loop::run_loop(m_req, runner, [&](const std::string& line) {
            progress.finish();
            inv.out << line << "\n" << std::flush;
        });
        progress.finish();
        inv.out << "next: " << out.status.next_text << "\n";
        return out.proposer_failed ? static_cast<int>(exit_code::proposer_failed) : 0;
    }

private:
    std::string m_workspace;
    std::string m_slurm_dir;           // --slurm DIR
    platform::slurm_options m_slurm;   // --slurm-gres, --slurm-partition, --slurm-time, --slurm-arg
    int m_iterations = 0;
    loop::run_request m_req;
};

}  // namespace

std::unique_ptr<command_base> make_run_command() { return std::make_unique<run_command>(); }

}  // namespace kloop::cli
