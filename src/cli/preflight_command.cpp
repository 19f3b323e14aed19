// kloop cli: `kloop preflight [--json] [--workspace DIR]` — GPU, driver, clocks, tools
// (platform/preflight.hpp). Exits 0 whether or not a GPU or a tool is there: absence is a
// finding, printed and recorded, not an error.
#include "cli/preflight_command.hpp"

#include <CLI/CLI.hpp>

#include <ostream>

#include <nlohmann/json.hpp>

#include "backend/cuda/nvcc_builder.hpp"
#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/preflight.hpp"
#include "platform/subprocess.hpp"

namespace kloop::cli {

namespace {

class preflight_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        sub.add_flag("--json", m_json, "Print the JSON record instead of the Markdown summary");
        sub.add_option("--workspace", m_workspace,
                       "Also write preflight_check.json and preflight_check.md into this directory");
        sub.add_flag("--no-python", m_no_python, "Skip the torch / triton version probes (python imports can be slow)");
    }

    int do_execute(const invocation& inv) override {
        platform::posix_command_runner commands;
        platform::preflight_options o;
        o.cuda_support_built_in = backend::cuda::cuda_support_built_in();
        o.query_python = !m_no_python;
        auto report = platform::run_preflight(commands, o);
        report.command_line = inv.argv;
        const auto record = platform::to_json(report);
        const auto markdown = platform::to_markdown(report);
        if (!m_workspace.empty()) {
            const std::filesystem::path dir(m_workspace);
            platform::write_file_atomic(dir / "preflight_check.json", record.dump(2) + "\n");
            platform::write_file_atomic(dir / "preflight_check.md", markdown);
        }
        if (m_json) inv.out << record.dump(2) << "\n";
        else inv.out << markdown;
        return static_cast<int>(exit_code::success);
    }

private:
    bool m_json = false;
    bool m_no_python = false;
    std::string m_workspace;
};

}  // namespace

std::unique_ptr<command_base> make_preflight_command() { return std::make_unique<preflight_command>(); }

}  // namespace kloop::cli
