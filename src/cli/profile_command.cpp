// kloop cli: `kloop profile <op-dir> --candidate FILE [--mode M] [--shape S] [--set targeted|full|source]
//            [--out DIR] [--json]` — Nsight Compute captures of one candidate, parsed and explained
// (eval/profile_step.hpp). Gate first: a candidate is never profiled before it is green, and the
// gate's kernel census names the kernels ncu should capture. Exit codes: 0 captured and parsed;
// 2 usage; 3 gate red; 4 build failed; 6 profiling unavailable or failed (ncu missing, no
// counter permission, ncu error) — the reason is printed.
#include "cli/profile_command.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <map>
#include <ostream>

#include <fmt/format.h>

#include "cli/loop_options.hpp"
#include "cli/progress_display.hpp"
#include "cli/option_checks.hpp"
#include "core/error.hpp"
#include "eval/evaluator.hpp"
#include "eval/profile_step.hpp"
#include "report/profile_report.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"
#include "platform/subprocess.hpp"
#include "spec/spec_loader.hpp"

namespace kloop::cli {

namespace fs = std::filesystem;

namespace {

class profile_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        sub.add_option("op-dir", m_op_dir, "Op directory holding op.toml (or the op.toml itself)")->required();
        sub.add_option("--candidate", m_candidate, "Candidate source file (.cu; a GPU Python op's .py or .cu)")->required();
        sub.add_option("--mode", m_modes, "Mode to profile (repeatable; default: every mode in the spec)");
        sub.add_option("--shape", m_shape, "Bench shape to profile (default: per mode, the bench shape with the most spec bytes)");
        sub.add_option("--set", m_sets,
                       "targeted (SpeedOfLight, Occupancy, LaunchStats, MemoryWorkloadAnalysis, WarpStateStats, "
                       "SchedulerStats), full (ncu --set full) or source (SourceCounters, --import-source yes); "
                       "repeatable (default: targeted)")
            ->check(CLI::IsMember({"targeted", "full", "source"}));
        sub.add_option("--out", m_out, "Folder for the reports, CSVs, logs and profile_summary.{json,md} (default: ./kloop-profile)");
        sub.add_option("--profile-timeout", m_timeout, "Wall-clock limit per ncu run, seconds")
            ->check(seconds_option())
            ->capture_default_str();
        sub.add_option("--timeout", m_gate_timeout, "Wall-clock limit of the gate's runner, seconds")
            ->check(seconds_option())
            ->capture_default_str();
        add_runner_limit_options(sub, m_limits);
        add_held_out_option(sub, m_limits);
        sub.add_flag("--no-gate", m_no_gate, "Profile without gating first (no census names: the profiler range alone selects the kernels)");
        sub.add_flag("--json", m_json, "Print profile_summary.json instead of the Markdown summary");
    }

    int do_execute(const invocation& inv) override {
        const auto spec = spec::load_op_spec(m_op_dir);
        if (!fs::exists(m_candidate)) throw usage_error("option --candidate '" + m_candidate + "': no such file");
        platform::posix_command_runner commands;
        platform::scoped_temp_dir scratch("kloop-profile");
        eval::evaluation_options o = m_limits;
        o.modes = m_modes;
        o.bench = false;
        o.timeout_s = m_gate_timeout;
        progress_display progress(inv.err, m_json);
        o.progress = progress.sink();
        const eval::evaluation_context ctx{spec, fs::absolute(m_candidate), o, commands, platform::cache_dir(), scratch.path()};

        std::map<std::string, std::vector<std::string>> names;
        if (!m_no_gate) {
            const auto ev = eval::evaluate(ctx);
            if (ev.status == eval::disposition::build_failed)
                throw error(exit_code::build_failed, "the candidate failed to build:\n" + ev.candidate_build.diagnostics);
            if (ev.status != eval::disposition::passed)
                throw error(exit_code::gate_red, "not profiled: " + ev.reason + " (run `kloop verify` for the details)");
            names = ev.census_kernels;
        }
        eval::profile_step_request req;
        req.out_dir = fs::absolute(m_out);
        req.timeout_s = m_timeout;
        req.sets.clear();
        for (const auto& s : m_sets.empty() ? std::vector<std::string>{"targeted"} : m_sets)
            req.sets.push_back(*eval::profile_set_from_string(s));
        for (const auto& m : spec.modes) {
            if (!m_modes.empty() && std::find(m_modes.begin(), m_modes.end(), m.name) == m_modes.end()) continue;
            eval::profile_target t;
            t.mode = m.name;
            t.shape = m_shape.empty() ? eval::default_profile_shape(spec, m.name) : m_shape;
            if (auto it = names.find(m.name); it != names.end()) t.kernel_names = it->second;
            req.targets.push_back(std::move(t));
        }
        if (req.targets.empty()) throw usage_error("option --mode: selects no mode of op '" + spec.name + "'");
        const auto r = eval::run_profile_step(ctx, req);
        progress.finish();
        report::write_profile_summary(req.out_dir, r);
        if (m_json) inv.out << report::to_json(r).dump(2) << "\n";
        else inv.out << report::to_markdown(r);
        inv.err << fmt::format("profile: {} — written to {}\n", r.status, (req.out_dir / "profile_summary.md").string());
        if (r.status == "unavailable" || r.status == "failed") {
            inv.err << "profile " << r.status << ": " << r.note << "\n";
            return static_cast<int>(exit_code::profile_unavailable);
        }
        return static_cast<int>(exit_code::success);
    }

private:
    std::string m_op_dir, m_candidate, m_shape, m_out = "kloop-profile";
    std::vector<std::string> m_modes, m_sets;
    double m_timeout = 600;
    double m_gate_timeout = 120;
    eval::evaluation_options m_limits;  // --compile-timeout, --max-output-mib
    bool m_no_gate = false;
    bool m_json = false;
};

}  // namespace

std::unique_ptr<command_base> make_profile_command() { return std::make_unique<profile_command>(); }

}  // namespace kloop::cli
