// kloop cli: `kloop iterate [--workspace DIR] [--candidate FILE] --proposal FILE` — one iteration:
// gate, A/B against the current best, classification, log row, snapshot, commit.
#include "cli/iterate_command.hpp"

#include <CLI/CLI.hpp>

#include <ostream>

#include "cli/loop_options.hpp"
#include "cli/progress_display.hpp"
#include "cli/timing_options.hpp"
#include "loop/iteration.hpp"
#include "report/detail/markdown.hpp"
#include "platform/subprocess.hpp"

namespace kloop::cli {

namespace {

struct iterate_config {
    std::string workspace;
    std::string candidate;
    std::string proposal;
    bool allow_unconfined = false;
    bool require_quiet = false;
    eval::evaluation_options options;
    measure::ab_config ab;
};

class iterate_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        add_workspace_option(sub, m_cfg.workspace);
        sub.add_option("--candidate", m_cfg.candidate, "The candidate source (default: the kernel file given to `kloop init`)");
        sub.add_option("--proposal", m_cfg.proposal,
                       "optimization_proposal.md: Direction, Expected and '## Strategy tags'")
            ->required();
        add_bench_options(sub, m_cfg.options);
        add_profile_options(sub, m_profile);
        add_min_effect_options(sub, m_cfg.ab);
        sub.add_flag("--allow-unconfined", m_cfg.allow_unconfined,
                     "Promote a FASTER candidate that ran unconfined (the Python worker, a kernel without seccomp or "
                     "Landlock); without it such a result is rejected (docs/security.md)");
        add_require_quiet_option(sub, m_cfg.require_quiet, "a FASTER candidate timed on a busy machine is not promoted");
    }

    int do_execute(const invocation& inv) override {
        platform::posix_command_runner runner;
        loop::iterate_request req;
        req.workspace = resolve_workspace(m_cfg.workspace, runner);
        if (!m_cfg.candidate.empty()) req.candidate = m_cfg.candidate;
        req.proposal = m_cfg.proposal;
        req.allow_unconfined = m_cfg.allow_unconfined;
        req.require_quiet = m_cfg.require_quiet;
        req.options = m_cfg.options;
        req.ab = m_cfg.ab;
        req.command_line = inv.argv;
        req.memory_db = memory_db_path();
        req.profile = m_profile;
        progress_display progress(inv.err, false);
        req.options.progress = progress.sink();
        const auto out = loop::run_iteration(req, runner);
        progress.finish();
        print_iteration_outcome(out, inv.out, inv.err);
        return 0;
    }

private:
    iterate_config m_cfg;
    loop::profile_options m_profile;
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
