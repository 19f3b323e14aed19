// kloop cli: `kloop evaluate-sibling TASK_DIR [options]` — one Slurm task of `kloop run --parallel
// --slurm`: the sibling's evaluation on its node (loop/sibling_slurm). kloop writes the task
// directory and the command line (the run's iteration options, forwarded); it is not for hand use
// and --help does not list it. Exit 0 with TASK_DIR/evaluated.json written, whatever the verdict.
#include "cli/evaluate_sibling_command.hpp"

#include <CLI/CLI.hpp>

#include "cli/loop_options.hpp"
#include "loop/sibling_slurm.hpp"
#include "platform/subprocess.hpp"

namespace kloop::cli {

namespace {

class evaluate_sibling_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        sub.add_option("task", m_task, "The task directory kloop run wrote (DIR/round-R/attempt-NNN)")
            ->required()
            ->check(CLI::ExistingDirectory);
        add_iteration_options(sub, m_req);
    }

    int do_execute(const invocation& inv) override {
        platform::posix_command_runner runner;
        m_req.command_line = inv.argv;
        loop::evaluate_sibling_task(m_task, m_req, runner);
        return 0;
    }

private:
    std::string m_task;
    loop::iterate_request m_req;
};

}  // namespace

std::unique_ptr<command_base> make_evaluate_sibling_command() { return std::make_unique<evaluate_sibling_command>(); }

}  // namespace kloop::cli
