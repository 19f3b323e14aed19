// kloop cli: `kloop status [--workspace DIR] [--json]` — where the loop stands and what the
// protocol demands next (iterate, stall, stop).
#include "cli/status_command.hpp"

#include <CLI/CLI.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ostream>

#include "cli/loop_options.hpp"
#include "report/detail/markdown.hpp"
#include "loop/loop_session.hpp"
#include "loop/loop_status.hpp"
#include "loop/record/proposer_calibration.hpp"
#include "loop/ranking.hpp"
#include "loop/status_document.hpp"
#include "platform/subprocess.hpp"

namespace kloop::cli {

namespace {


class status_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        add_workspace_option(sub, m_workspace);
        sub.add_flag("--json", m_json, "Print a JSON object instead of text");
    }

    int do_execute(const invocation& inv) override {
        platform::posix_command_runner runner;
        const auto root = resolve_workspace(m_workspace, runner);
        const auto s = loop::open_session(root, loop::access::read, {inv.argv, {}});
        loop::strategy_memory memory(memory_db_path());
        loop::reconcile_memory(s, memory);
        const auto st = loop::compute_status(s.records, s.c.max_iterations, s.c.target_speedup);
        const auto fps = memory.summarise(s.key());
        const auto calibration = loop::calibrate(s.records);
        if (m_json) {
            inv.out << loop::status_json(s, st, fps).dump(2) << "\n";
            return 0;
        }
        inv.out << fmt::format("{} — workspace {}\n", s.c.op, s.ws.root().string());
        inv.out << fmt::format("iterations: {} of {} (positive {}, negative {}, rejected {})\n", st.iterations, st.max_iterations,
                               st.positive, st.negative, st.rejected);
        if (st.best) {
            const auto& r = s.records[static_cast<std::size_t>(*st.best)];
            inv.out << fmt::format("best: {} — geomean median {} ms", loop::version_label(*st.best),
                                   report::detail::ms(st.best_geomean_median_s.value_or(0)));
            if (st.estimated_speedup && *st.best != 0)
                inv.out << fmt::format(" (about x{:.2f} vs v0, estimated from separate runs; `kloop report` measures it)",
                                       *st.estimated_speedup);
            inv.out << "\n";
            for (const auto& b : r.bench) inv.out << fmt::format("  {}/{}: median {} ms\n", b.mode, b.shape, report::detail::ms(b.s.median));
        }
        inv.out << fmt::format("since the last improvement: {} iteration(s)\n", st.since_improvement);
        for (const auto& f : fps)
            if (f.is_blocked())
                inv.out << fmt::format("blocked: {} ({}) — {} negative, {} rejected\n", f.fingerprint, fmt::join(f.tags, ", "), f.negative,
                                       f.rejected);
        for (const auto& f : fps)
            if (f.is_preferred()) inv.out << fmt::format("preferred: {} ({})\n", f.fingerprint, fmt::join(f.tags, ", "));
        if (const auto& c = calibration.all; c.made > 0)
            inv.out << fmt::format("predictions: {} made, {} scored, {} hit{}; misses {} optimistic, {} pessimistic\n", c.made,
                                   c.scored, c.hits, c.hit_rate() ? fmt::format(" ({:.0f} %)", *c.hit_rate() * 100) : "",
                                   c.optimistic, c.pessimistic);
        for (const auto& r : s.repairs) inv.out << "repaired: " << r << "\n";
        inv.out << "next: " << st.next_text << "\n";
        return 0;
    }

private:
    std::string m_workspace;
    bool m_json = false;
};

}  // namespace

std::unique_ptr<command_base> make_status_command() { return std::make_unique<status_command>(); }

}  // namespace kloop::cli
