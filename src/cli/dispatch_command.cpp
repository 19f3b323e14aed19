// kloop cli: `kloop dispatch --bucket COND --entry NAME --why TEXT (--iteration N --shape
// MODE/SHAPE | --baseline-ms X --candidate-ms Y)` — record a shape-specialised path in dispatch.md.
#include "cli/dispatch_command.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <fmt/format.h>
#include <ostream>

#include "cli/loop_options.hpp"
#include "core/error.hpp"
#include "report/dispatch.hpp"
#include "loop/loop_session.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"

namespace kloop::cli {

namespace {

class dispatch_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        add_workspace_option(sub, m_workspace);
        sub.add_option("--bucket", m_e.bucket, "The bucket condition, e.g. 'D % 8 != 0' or 'T <= 512'")->required();
        sub.add_option("--entry", m_e.entry, "The entry point / path taken in that bucket")->required();
        sub.add_option("--why", m_e.why, "The profile signal or bound that justifies the path")->required();
        m_iter = sub.add_option("--iteration", m_iteration, "Take the times from this iteration's A/B (best vs candidate)");
        sub.add_option("--shape", m_shape, "With --iteration: the MODE/SHAPE row of that A/B");
        m_base = sub.add_option("--baseline-ms", m_e.baseline_ms, "Baseline median in ms (by hand)");
        m_cand = sub.add_option("--candidate-ms", m_e.candidate_ms, "Candidate median in ms (by hand)");
    }

    int do_execute(const invocation& inv) override {
        platform::posix_command_runner runner;
        const auto s = loop::open_session(resolve_workspace(m_workspace, runner), loop::access::write, {inv.argv, {}});
        if (m_iter->count() > 0) {
            if (m_base->count() > 0 || m_cand->count() > 0)
                throw usage_error("option --iteration: give either --iteration/--shape or --baseline-ms/--candidate-ms, not both");
            if (m_iteration < 1 || m_iteration >= static_cast<int>(s.records.size()))
                throw usage_error(fmt::format("option --iteration '{}': no such iteration (v1..v{})", m_iteration, s.records.size() - 1));
            const auto& r = s.records[static_cast<std::size_t>(m_iteration)];
            bool found = false;
            for (const auto& c : r.ab)
                if (c.mode + "/" + c.shape == m_shape && c.ok && c.best_s && c.candidate_s) {
                    m_e.baseline_ms = c.best_s->median * 1e3;
                    m_e.candidate_ms = c.candidate_s->median * 1e3;
                    found = true;
                }
            if (!found)
                throw usage_error(fmt::format("option --shape '{}': v{} has no timed A/B row of that name (MODE/SHAPE)", m_shape,
                                              m_iteration));
            m_e.source = fmt::format("A/B of v{} vs v{}, {} (same run)", m_iteration, r.vs_best, m_shape);
        } else {
            if (m_base->count() == 0 || m_cand->count() == 0)
                throw usage_error("option --baseline-ms/--candidate-ms: both are needed without --iteration");
            m_e.source = "given by hand";
        }
        const auto file = s.ws.dispatch_file();
        const std::string existing = std::filesystem::exists(file) ? platform::read_file(file) : std::string();
        platform::write_file_atomic(file, report::append_dispatch_row(existing, s.c.op, m_e));
        inv.out << report::dispatch_row(m_e) << "written: " << file.string() << "\n";
        return 0;
    }

private:
    std::string m_workspace;
    report::dispatch_entry m_e;
    int m_iteration = 0;
    std::string m_shape;
    CLI::Option* m_iter = nullptr;
    CLI::Option* m_base = nullptr;
    CLI::Option* m_cand = nullptr;
};

}  // namespace

std::unique_ptr<command_base> make_dispatch_command() { return std::make_unique<dispatch_command>(); }

}  // namespace kloop::cli
