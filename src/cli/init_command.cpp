// kloop cli: `kloop init <op-dir> --candidate FILE --max-iterations N [--target-speedup X]
// [--workspace DIR]` — freeze the contract, measure the baseline v0, write the workspace.
#include "cli/init_command.hpp"

#include <CLI/CLI.hpp>

#include <ostream>

#include "cli/loop_options.hpp"
#include "cli/progress_display.hpp"
#include "core/error.hpp"
#include "loop/initialise.hpp"
#include "platform/subprocess.hpp"
#include "report/evaluation_text.hpp"

namespace kloop::cli {

namespace {

struct init_config {
    std::string op_dir;
    std::string candidate;
    int max_iterations = 0;
    double target_speedup = 0;
    std::string workspace;
    eval::evaluation_options options;
};

class init_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        sub.add_option("op-dir", m_cfg.op_dir, "Op directory holding op.toml (or the op.toml itself)")->required();
        sub.add_option("--candidate", m_cfg.candidate, "The kernel file the loop optimises; its contents now are v0")->required();
        sub.add_option("--max-iterations", m_cfg.max_iterations, "Iteration cap (required, never defaulted)")
            ->required()
            ->check(CLI::PositiveNumber);
        m_target = sub.add_option("--target-speedup", m_cfg.target_speedup, "Target geomean speedup over v0 (> 1)");
        sub.add_option("--workspace", m_cfg.workspace, "Workspace directory (default: <repo>/profile/<op>-opt/)");
        add_bench_options(sub, m_cfg.options);
        add_profile_options(sub, m_profile);
    }

    int do_execute(const invocation& inv) override {
        platform::posix_command_runner runner;
        loop::init_request req;
        req.op_dir = m_cfg.op_dir;
        req.candidate = m_cfg.candidate;
        req.max_iterations = m_cfg.max_iterations;
        if (m_target->count() > 0) req.target_speedup = m_cfg.target_speedup;
        if (!m_cfg.workspace.empty()) req.workspace = m_cfg.workspace;
        req.options = m_cfg.options;
        req.command_line = inv.argv;
        req.memory_db = memory_db_path();
        req.profile = m_profile;
        progress_display progress(inv.err, false);
        req.options.progress = progress.sink();
        const auto out = loop::initialise(req, runner);
        progress.finish();
        inv.out << report::to_text(out.baseline);
        if (!out.created) {
            inv.err << "kloop: error: the baseline (v0) is not green; the loop starts from a correct kernel. Nothing was "
                       "written.\n";
            return static_cast<int>(out.baseline.status == eval::disposition::build_failed ? exit_code::build_failed
                                                                                              : exit_code::gate_red);
        }
        inv.out << "\nworkspace: " << out.workspace.string() << "\n";
        for (const auto& n : out.notes) inv.out << "note: " << n << "\n";
        inv.out << "next: write docs/draft.md's open points, read TRAPS.md, then make one change and run `kloop iterate "
                   "--workspace "
                << out.workspace.string() << " --proposal optimization_proposal.md`\n";
        return 0;
    }

private:
    init_config m_cfg;
    loop::profile_options m_profile;
    CLI::Option* m_target = nullptr;
};

}  // namespace

std::unique_ptr<command_base> make_init_command() { return std::make_unique<init_command>(); }

}  // namespace kloop::cli
