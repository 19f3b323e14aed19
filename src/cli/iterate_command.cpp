// kloop cli: `kloop iterate [--workspace DIR] [--candidate FILE] --proposal FILE` — one iteration:
// gate, A/B against the current best, classification, log row, snapshot, commit.
#include "cli/iterate_command.hpp"

#include <CLI/CLI.hpp>

#include <ostream>

#include "cli/loop_options.hpp"
#include "cli/progress_display.hpp"
#include "loop/iteration.hpp"
#include "report/detail/markdown.hpp"
#include "platform/subprocess.hpp"

namespace kloop::cli {

namespace {

class iterate_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        add_workspace_option(sub, m_workspace);
        sub.add_option("--candidate", m_candidate, "The candidate source (default: the kernel file given to `kloop init`)");
        sub.add_option("--proposal", m_req.proposal,
                       "optimization_proposal.md: Direction, Expected and '## Strategy tags'")
            ->required();
        add_iteration_options(sub, m_req);
    }

    int do_execute(const invocation& inv) override {
        platform::posix_command_runner runner;
        auto req = m_req;
        req.workspace = resolve_workspace(m_workspace, runner);
        if (!m_candidate.empty()) req.candidate = m_candidate;
        req.command_line = inv.argv;
        req.memory_db = memory_db_path();
        progress_display progress(inv.err, false);
        req.options.progress = progress.sink();
        const auto out = loop::run_iteration(req, runner);
        progress.finish();
        print_iteration_outcome(out, inv.out, inv.err);
        return 0;
    }

private:
    std::string m_workspace;
    std::string m_candidate;
    loop::iterate_request m_req;
};

}  // namespace

void print_iteration_outcome(const loop::iterate_outcome& out, std::ostream& os, std::ostream& err) {
    const auto& r = out.record;
    for (const auto& w : r.warnings) err << "kloop: warning: " << w << "\n";
    for (const auto& n : out.notes) os << "note: " << n << "\n";
    os << loop::version_label(r.number) << ": " << loop::to_string(r.status);
    if (r.status == loop::iteration_status::rejected) os << " (" << loop::to_string(r.rejection) << ")";
    os << " — " << r.reason << "\n";
    for (const auto& c : r.ab)
        if (c.verdict && c.best_s && c.candidate_s)
            os << fmt::format("  {}/{}: {} ms -> {} ms  x{:.3f} [{:.3f}, {:.3f}] {}\n", c.mode, c.shape,
                              report::detail::ms(c.best_s->median), report::detail::ms(c.candidate_s->median),
                              c.verdict->speedup, c.verdict->ci_low, c.verdict->ci_high,
                              measure::to_string(c.verdict->verdict));
    os << "  predicted: " << r.expected << "\n";
    for (const auto& p : r.predictions)
        os << fmt::format("  prediction '{}': {}{}\n", p.claim.text, loop::to_string(p.score.outcome),
                          p.score.outcome == loop::prediction_outcome::unscored ? " (" + p.score.reason + ")"
                          : p.score.measured ? fmt::format(" (measured {:.4g})", *p.score.measured)
                                             : std::string());
    os << "  recorded: " << out.dir.string() << "\n";
    os << "  git: " << (r.git.committed ? "committed " + r.git.commit : r.git.note) << "\n";
    os << "next: " << out.status.next_text << "\n";
}

std::unique_ptr<command_base> make_iterate_command() { return std::make_unique<iterate_command>(); }

}  // namespace kloop::cli
