// kloop cli: `kloop noise <op-dir> --candidate FILE [--runs N] [--json] [--min-effect X] ...`
//
// The candidate is built and gated once (as both sides of an A/B), then timed against itself in
// N fresh A/B runner processes (the same library on both sides, new input values each run).
// Every FASTER or SLOWER verdict is false by construction; the report gives, per shape, how far
// the measured ratio strays from 1 (the noise floor) and how wide the intervals are, and the
// share of false verdicts, to be held under 5 % at the chosen minimum effect.
#include "cli/noise_command.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/compare_command.hpp"
#include "cli/timing_options.hpp"
#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"
#include "platform/subprocess.hpp"
#include "report/ab_text.hpp"
#include "spec/spec_loader.hpp"

namespace kloop::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

inline constexpr int noise_schema_version = 1;
inline constexpr double allowed_false_rate = 0.05;

std::string load_average() {
    std::ifstream in("/proc/loadavg");
    std::string a, b, c;
    if (!(in >> a >> b >> c)) return "unknown";
    return a + " " + b + " " + c;
}

double median_of(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const auto n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct shape_noise {
    std::string mode, shape;
    std::vector<double> speedups, half_widths;  // half-width of the CI, as a fraction of 1
    int faster = 0, slower = 0, same = 0, ambiguous = 0, failed = 0;
    [[nodiscard]] int verdicts() const { return faster + slower + same + ambiguous; }
    [[nodiscard]] double abs_log_median() const {
        std::vector<double> v;
        for (double s : speedups) v.push_back(std::fabs(std::log(s)));
        return median_of(v);
    }
    [[nodiscard]] double abs_log_max() const {
        double m = 0;
        for (double s : speedups) m = std::max(m, std::fabs(std::log(s)));
        return m;
    }
};

void count(int& faster, int& slower, int& same, int& ambiguous, measure::ab_verdict v) {
    switch (v) {
        case measure::ab_verdict::faster: ++faster; break;
        case measure::ab_verdict::slower: ++slower; break;
        case measure::ab_verdict::same: ++same; break;
        case measure::ab_verdict::ambiguous: ++ambiguous; break;
    }
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
        const fs::path cand = fs::absolute(c.candidate);
        const eval::ab_context ctx{spec, cand, cand, c.options, c.ab, commands, platform::cache_dir(), scratch_dir};

        std::vector<eval::ab_evaluation> runs;
        runs.reserve(static_cast<std::size_t>(c.runs));  // `first` stays valid while runs grow
        runs.push_back(eval::compare_candidates(ctx));
        auto& first = runs.front();
        first.base_label = first.candidate_label = c.candidate;
        first.command_line = inv.argv;
        if (!first.timed) {
            if (c.json) inv.out << json{{"schema_version", noise_schema_version}, {"kind", "kloop.noise"},
                                        {"ok", false}, {"reason", first.reason}}.dump(2)
                                << "\n";
            else inv.out << report::to_text(first);
            return compare_exit_code(first);
        }
        if (!c.json) {
            inv.out << fmt::format("kloop noise {} | {} against itself, {} runs\n", spec.name, c.candidate, c.runs);
            // Which shape each of a run line's marks is, in order.
            inv.out << "  per-shape marks, in order:";
            for (const auto& s : first.shapes) inv.out << ' ' << s.mode << '/' << s.shape;
            inv.out << "\n";
        }
        auto progress = [&](int i, const eval::ab_evaluation& r) {
            if (c.json) return;
            inv.out << fmt::format("  run {:>3}/{}: ", i + 1, c.runs);
            if (r.overall)
                inv.out << fmt::format("geomean {:.4f}x [{:.4f}, {:.4f}] {}", r.overall->speedup, r.overall->ci_low,
                                       r.overall->ci_high, measure::to_string(r.overall->verdict));
            else
                inv.out << "no overall verdict";
            // Every shape's verdict, so a run cut short still shows its shape verdicts:
            // + FASTER, - SLOWER, = SAME, ? AMBIGUOUS, x no verdict.
            inv.out << " | per shape";
            for (const auto& s : r.shapes) {
                const char* mark = "x";
                if (s.verdict) switch (s.verdict->verdict) {
                        case measure::ab_verdict::faster: mark = "+"; break;
                        case measure::ab_verdict::slower: mark = "-"; break;
                        case measure::ab_verdict::same: mark = "="; break;
                        case measure::ab_verdict::ambiguous: mark = "?"; break;
                    }
                inv.out << ' ' << mark;
            }
            if (!r.ok) inv.out << " | " << r.reason;
            inv.out << "\n" << std::flush;
        };
        progress(0, first);
        for (int i = 1; i < c.runs; ++i) {
            auto next = eval::retime_candidates(ctx, first, i);
            runs.push_back(std::move(next));
            progress(i, runs.back());
        }
        const std::string load_after = load_average();

        // Per shape, across runs (the shapes come in the same order every run).
        std::vector<shape_noise> shapes;
        int o_faster = 0, o_slower = 0, o_same = 0, o_ambiguous = 0;
        bool all_ok = true;
        std::string first_failure;  // why the first run that is not ok is not (a red side, a shape)
        for (const auto& r : runs) {
            all_ok = all_ok && r.ok;
            if (!r.ok && first_failure.empty()) first_failure = r.reason.empty() ? "a run did not complete" : r.reason;
            if (r.overall) count(o_faster, o_slower, o_same, o_ambiguous, r.overall->verdict);
            for (std::size_t k = 0; k < r.shapes.size(); ++k) {
                const auto& s = r.shapes[k];
                if (shapes.size() <= k) shapes.push_back(shape_noise{s.mode, s.shape, {}, {}});
                auto& n = shapes[k];
                if (!s.ok || !s.verdict) {
                    ++n.failed;
                    continue;
                }
                n.speedups.push_back(s.verdict->speedup);
                n.half_widths.push_back((s.verdict->ci_high - s.verdict->ci_low) / 2);
                count(n.faster, n.slower, n.same, n.ambiguous, s.verdict->verdict);
            }
        }
        int verdicts = 0, false_verdicts = 0;
        for (const auto& n : shapes) {
            verdicts += n.verdicts();
            false_verdicts += n.faster + n.slower;
        }
        const double false_rate = verdicts ? static_cast<double>(false_verdicts) / verdicts : 0.0;
        const bool within = verdicts > 0 && false_rate <= allowed_false_rate;

        json shapes_json = json::array();
        for (const auto& n : shapes) {
            const int v = n.verdicts();
            shapes_json.push_back({{"mode", n.mode},
                                   {"shape", n.shape},
                                   {"runs", v},
                                   {"failed_runs", n.failed},
                                   {"speedups", n.speedups},
                                   {"median_abs_log_speedup", n.abs_log_median()},
                                   {"noise_floor", std::expm1(n.abs_log_median())},
                                   {"max_deviation", std::expm1(n.abs_log_max())},
                                   {"median_ci_half_width", median_of(n.half_widths)},
                                   {"verdicts", {{"FASTER", n.faster}, {"SLOWER", n.slower}, {"SAME", n.same},
                                                 {"AMBIGUOUS", n.ambiguous}}},
                                   {"false_verdict_rate", v ? static_cast<double>(n.faster + n.slower) / v : 0.0}});
        }
        const auto& env = first.env;
        json record = {
            {"schema_version", noise_schema_version},
            {"kind", "kloop.noise"},
            {"kloop", {{"version", env.kloop_version}, {"commit", env.kloop_commit}, {"dirty", env.kloop_dirty},
                       {"build_type", env.build_type}}},
            {"command_line", inv.argv},
            {"op", spec.name},
            {"candidate", c.candidate},
            {"git", {{"available", env.git_available}, {"commit", env.git_commit}, {"dirty", env.git_dirty}}},
            {"env", {{"host_cpu", env.host_cpu}, {"logical_cpus", env.logical_cpus}, {"llc_bytes", env.llc_bytes},
                     {"compiler", env.compiler}, {"flags", env.flags},
                     {"load_average_before", load_before}, {"load_average_after", load_after}}},
            {"runs", c.runs},
            {"ok", all_ok},
            {"reason", first_failure},
            {"config", {{"min_effect", c.ab.min_effect}, {"resamples", c.ab.resamples}, {"confidence", c.ab.confidence},
                        {"min_samples", c.ab.min_samples},
                        {"stop", {{"min_samples", c.options.stop.min_samples}, {"min_time_s", c.options.stop.min_time_s},
                                  {"max_time_s", c.options.stop.max_time_s},
                                  {"target_rel_stdev", c.options.stop.target_rel_stdev}}}}},
            {"shapes", shapes_json},
            {"overall", {{"shape_verdicts", verdicts},
                         {"false_verdicts", false_verdicts},
                         {"false_verdict_rate", false_rate},
                         {"allowed_false_verdict_rate", allowed_false_rate},
                         {"within_allowed", within},
                         {"geomean_verdicts", {{"FASTER", o_faster}, {"SLOWER", o_slower}, {"SAME", o_same},
                                               {"AMBIGUOUS", o_ambiguous}}}}}};
        if (!c.json_out.empty()) platform::write_file_atomic(c.json_out, record.dump(2) + "\n");
        if (c.json) {
            inv.out << record.dump(2) << "\n";
        } else {
            inv.out << fmt::format("env: {} ({} cpus) | {} | candidate git {} | load average {} before, {} after\n",
                                   env.host_cpu, env.logical_cpus, env.compiler, report::git_text(env), load_before,
                                   load_after);
            inv.out << fmt::format("  {:<5} {:<14} {:>5} {:>12} {:>14} {:>14} {:>7} {:>7} {:>5} {:>10}\n", "mode", "shape",
                                   "runs", "noise floor", "max deviation", "CI half-width", "FASTER", "SLOWER", "SAME",
                                   "AMBIGUOUS");
            for (const auto& n : shapes)
                inv.out << fmt::format("  {:<5} {:<14} {:>5} {:>11.2f}% {:>13.2f}% {:>13.2f}% {:>7} {:>7} {:>5} {:>10}{}\n",
                                       n.mode, n.shape, n.verdicts(), std::expm1(n.abs_log_median()) * 100,
                                       std::expm1(n.abs_log_max()) * 100, median_of(n.half_widths) * 100, n.faster,
                                       n.slower, n.same, n.ambiguous,
                                       n.failed ? fmt::format("  ({} runs failed)", n.failed) : "");
            inv.out << "  (noise floor: median |log speedup| over the runs, as a percentage; CI half-width: median "
                       "half-width of the 95 % interval)\n";
            inv.out << fmt::format("false verdicts (FASTER/SLOWER of A against A): {} of {} shape verdicts = {:.1f} % "
                                   "(allowed {:.0f} % at min effect {:g} %): {}\n",
                                   false_verdicts, verdicts, false_rate * 100, allowed_false_rate * 100,
                                   c.ab.min_effect * 100, within ? "OK" : "TOO NOISY");
            inv.out << fmt::format("overall geomean verdicts: {} FASTER, {} SLOWER, {} SAME, {} AMBIGUOUS\n", o_faster,
                                   o_slower, o_same, o_ambiguous);
        }
        if (!all_ok && !c.json) inv.out << "NOT OK: " << first_failure << "\n";
        return all_ok ? static_cast<int>(exit_code::success) : static_cast<int>(exit_code::gate_red);
    }

private:
    noise_config m_cfg;
};

}  // namespace

std::unique_ptr<command_base> make_noise_command() { return std::make_unique<noise_command>(); }

}  // namespace kloop::cli
