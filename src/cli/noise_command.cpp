// kloop cli: `kloop noise <op-dir> --candidate FILE [--runs N] [--json] [--min-effect X] ...`
//
// The candidate is built and gated once (as both sides of an A/B), then timed against itself in
// N fresh A/B runner processes (the same library on both sides, new input values each run).
// Every FASTER or SLOWER verdict is false by construction: measure/noise_floor gathers, per
// shape, how far the measured ratio strays from 1 and the share of false verdicts (held under
// 5 % at the chosen minimum effect); report/noise_report prints and records it.
#include "cli/noise_command.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <ostream>


#include "cli/compare_command.hpp"
#include "cli/progress_display.hpp"
#include "cli/timing_options.hpp"
#include "core/error.hpp"
#include "measure/noise_floor.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"
#include "platform/subprocess.hpp"
#include "report/ab_text.hpp"
#include "report/noise_report.hpp"
#include "spec/spec_loader.hpp"

namespace kloop::cli {

namespace fs = std::filesystem;

namespace {

std::string load_average() {
    std::ifstream in("/proc/loadavg");
    std::string a, b, c;
    if (!(in >> a >> b >> c)) return "unknown";
    return a + " " + b + " " + c;
}

struct noise_config {
    std::string op_dir;
    std::string candidate;
    int runs = 10;
    bool json = false;
    std::string json_out;
    std::string keep_dir;
    eval::evaluation_options options;
    measure::ab_config ab;
    bool require_quiet = false;            // --require-quiet
};

class noise_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        sub.add_option("op-dir", m_cfg.op_dir, "Op directory holding op.toml (or the op.toml itself)")->required();
        sub.add_option("--candidate", m_cfg.candidate,
                       "The version timed against itself (built and gated once; both sides load the same library)")
            ->required();
        sub.add_option("--runs", m_cfg.runs,
                       "How many A/B runs, each in a fresh runner process with new input values")
            ->check(CLI::Range(1, 10000))
            ->capture_default_str();
        sub.add_flag("--json", m_cfg.json, "Print the JSON record (schema kloop.noise) instead of the text report");
        sub.add_option("--json-out", m_cfg.json_out, "Also write the JSON record to this file");
        add_min_effect_options(sub, m_cfg.ab);
        declare_ab_timing_options(sub, m_cfg.options);
        sub.add_option("--keep", m_cfg.keep_dir, "Keep the runners' jobs, events and logs (of the last run) here");
        add_require_quiet_option(sub, m_cfg.require_quiet, "exit 2 after the report");
    }

    int do_execute(const invocation& inv) override {
        auto& c = m_cfg;
        const auto spec = spec::load_op_spec(c.op_dir);
        if (!fs::exists(c.candidate)) throw usage_error("option --candidate '" + c.candidate + "': no such file");
        const std::string load_before = load_average();

        platform::posix_command_runner commands;
        std::optional<platform::scoped_temp_dir> scratch;
        fs::path scratch_dir;
        if (!c.keep_dir.empty()) {
            scratch_dir = fs::absolute(c.keep_dir);
            platform::ensure_directory(scratch_dir);
        } else {
            scratch.emplace("kloop-noise");
            scratch_dir = scratch->path();
        }
        progress_display display(inv.err, c.json);
        c.options.progress = display.sink();
        const fs::path cand = fs::absolute(c.candidate);
        const eval::ab_context ctx{spec, cand, cand, c.options, c.ab, commands, platform::cache_dir(), scratch_dir};

        std::vector<eval::ab_evaluation> runs;
        runs.reserve(static_cast<std::size_t>(c.runs));  // `first` stays valid while runs grow
        runs.push_back(eval::compare_candidates(ctx));
        auto& first = runs.front();
        first.base_label = first.candidate_label = c.candidate;
        first.command_line = inv.argv;
        display.finish();
        if (!first.timed) {
            if (c.json) inv.out << report::noise_not_timed_json(first.reason).dump(2) << "\n";
            else inv.out << report::to_text(first);
            return compare_exit_code(first);
        }
        if (!c.json) inv.out << report::noise_header(spec.name, c.candidate, c.runs, first);
        auto print_run = [&](int i, const eval::ab_evaluation& r) {
            display.finish();
            if (!c.json) inv.out << report::noise_run_line(i, c.runs, r) << std::flush;
        };
        print_run(0, first);
        for (int i = 1; i < c.runs; ++i) {
            auto next = eval::retime_candidates(ctx, first, i);
            runs.push_back(std::move(next));
            print_run(i, runs.back());
        }

        // Per shape, across runs (the shapes come in the same order every run): measure/noise_floor.
        report::noise_record rec;
        rec.op = spec.name;
        rec.candidate = c.candidate;
        rec.command_line = inv.argv;
        rec.env = first.env;
        rec.load_before = load_before;
        rec.load_after = load_average();
        rec.runs = c.runs;
        rec.ab = c.ab;
        rec.stop = c.options.stop;
        rec.ok = true;
        std::vector<measure::noise_run> timed;
        for (const auto& r : runs) {
            rec.host_load = platform::combined(rec.host_load, r.host_load);
            rec.busy_runs += r.host_load.busy() ? 1 : 0;
            rec.ok = rec.ok && r.ok;
            if (!r.ok && rec.reason.empty()) rec.reason = r.reason.empty() ? "a run did not complete" : r.reason;
            measure::noise_run run;
            run.overall = r.overall;
            for (const auto& s : r.shapes)
                run.shapes.push_back({s.mode, s.shape, s.ok ? s.verdict : std::nullopt});
            timed.push_back(std::move(run));
        }
        rec.summary = measure::summarize_noise(timed);
        if (rec.busy_runs > 0)
            rec.warnings = measure::busy_machine_warning(
                true, fmt::format("{} of {} runs: {}", rec.busy_runs, c.runs, rec.host_load.describe()));
        const auto record = report::to_json(rec);
        if (!c.json_out.empty()) platform::write_file_atomic(c.json_out, record.dump(2) + "\n");
        if (c.json) inv.out << record.dump(2) << "\n";
        else inv.out << report::to_text(rec);
        const int rc = rec.ok ? static_cast<int>(exit_code::success) : static_cast<int>(exit_code::gate_red);
        // A busy run refuses the whole measurement under --require-quiet (named by that run's load).
        const auto busy = std::find_if(runs.begin(), runs.end(), [](const auto& r) { return r.host_load.busy(); });
        return busy == runs.end() ? rc : refuse_busy(c.require_quiet, busy->host_load, inv.err, rc);
    }

private:
    noise_config m_cfg;
};

}  // namespace

std::unique_ptr<command_base> make_noise_command() { return std::make_unique<noise_command>(); }

}  // namespace kloop::cli
