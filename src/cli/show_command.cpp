// kloop cli: `kloop show [--workspace DIR] [--out FILE]` — write the loop's HTML page
// (report.html: history, per-shape speedups, distributions, roofline, diagnosis, final claim,
// links) from the workspace's records, without measuring anything, and print its path.
#include "cli/show_command.hpp"

#include <CLI/CLI.hpp>

#include <ostream>

#include "cli/loop_options.hpp"
#include "loop/report_page.hpp"
#include "platform/subprocess.hpp"

namespace kloop::cli {

namespace {

class show_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        add_workspace_option(sub, m_workspace);
        sub.add_option("--out", m_out, "Write the page here instead of <workspace>/report.html (its links stay relative to it)")
            ->type_name("FILE");
    }

    int do_execute(const invocation& inv) override {
        platform::posix_command_runner runner;
        loop::show_request req;
        req.workspace = resolve_workspace(m_workspace, runner);
        if (!m_out.empty()) req.out = m_out;
        req.command_line = inv.argv;
        inv.out << "written: " << loop::write_report_page(req).string() << "\n";
        return 0;
    }

private:
    std::string m_workspace;
    std::string m_out;
};

}  // namespace

std::unique_ptr<command_base> make_show_command() { return std::make_unique<show_command>(); }

}  // namespace kloop::cli
