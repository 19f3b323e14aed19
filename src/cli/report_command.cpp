// kloop cli: `kloop report [--workspace DIR]` — re-measure the best against v0 side by side and
// write final_summary.md (promotion verdict, final-claim block, rejected versions, memory); with
// --html also report.html, the loop's page (loop/report_page), from that re-measurement.
#include "cli/report_command.hpp"

#include <CLI/CLI.hpp>

#include <ostream>

#include "cli/loop_options.hpp"
#include "cli/progress_display.hpp"
#include "cli/timing_options.hpp"
#include "loop/final_report.hpp"
#include "platform/subprocess.hpp"

namespace kloop::cli {

namespace {

class report_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        add_workspace_option(sub, m_workspace);
        sub.add_flag("--quiet", m_quiet, "Print only the verdict and the path of final_summary.md");
        sub.add_flag("--allow-unprofiled", m_req.allow_unprofiled,
                     "Promote a CUDA version without a full Nsight Compute profile (where ncu cannot run); the final "
                     "summary says so");
        sub.add_flag("--html", m_req.html,
                     "Also write report.html in the workspace: the loop's page, with this re-measurement's samples "
                     "(`kloop show` writes it without measuring)");
        add_bench_options(sub, m_req.options);
        add_min_effect_options(sub, m_req.ab);
    }

    int do_execute(const invocation& inv) override {
        platform::posix_command_runner runner;
        m_req.workspace = resolve_workspace(m_workspace, runner);
        m_req.command_line = inv.argv;
        m_req.memory_db = memory_db_path();
        progress_display progress(inv.err, m_quiet);
        m_req.options.progress = progress.sink();
        const auto out = loop::write_final_report(m_req, runner);
        progress.finish();
        if (!m_quiet) inv.out << out.summary << "\n";
        inv.out << "verdict: " << out.verdict.verdict << "\n";
        inv.out << "written: " << out.summary_file.string() << "\n";
        if (out.page_file) inv.out << "written: " << out.page_file->string() << "\n";
        return 0;
    }

private:
    std::string m_workspace;
    bool m_quiet = false;
    loop::report_request m_req;
};

}  // namespace

std::unique_ptr<command_base> make_report_command() { return std::make_unique<report_command>(); }

}  // namespace kloop::cli
