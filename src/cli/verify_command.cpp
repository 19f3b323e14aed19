// kloop cli: `kloop verify <op-dir> --candidate FILE [--mode M] [--gate-k EXPR] [--json] ...`
#include "cli/verify_command.hpp"

#include <CLI/CLI.hpp>

#include <ostream>

#include "cli/base_checkout.hpp"
#include "cli/compare_command.hpp"
#include "cli/loop_options.hpp"
#include "cli/option_checks.hpp"
#include "cli/progress_display.hpp"
#include "cli/timing_options.hpp"
#include "core/error.hpp"
#include "eval/evaluator.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"
#include "platform/subprocess.hpp"
#include "report/ab_json.hpp"
#include "report/ab_text.hpp"
#include "report/evaluation_json.hpp"
#include "report/evaluation_text.hpp"
#include "spec/spec_loader.hpp"

namespace kloop::cli {

namespace {

struct verify_config {
    std::string op_dir;
    std::string candidate;
    std::vector<std::string> modes;
    std::string gate_k;
    bool json = false;
    std::string json_out;
    std::string seed;                      // --seed, checked by seed_option()
    double timeout_s = 120;
    bool no_bench = false;
    eval::evaluation_options options;
    std::string keep_dir;
    std::string base;                      // --base: compare against this file or git ref afterwards
    bool require_quiet = false;            // --require-quiet
};

class verify_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        sub.add_option("op-dir", m_cfg.op_dir, "Op directory holding op.toml (or the op.toml itself)")->required();
        sub.add_option("--candidate", m_cfg.candidate, "Candidate source file (.cpp for the cpu backend)")->required();
        sub.add_option("--mode", m_cfg.modes, "Mode to check (repeatable; default: every mode in the spec)");
        sub.add_option("--shape", m_cfg.options.bench_shapes,
                       "Bench shape to time (repeatable; default: every bench shape); the gate is unchanged");
        sub.add_option("--gate-k", m_cfg.gate_k,
                       "Keyword expression selecting gate shapes (pytest -k style); marks the run partial");
        sub.add_flag("--json", m_cfg.json, "Print the JSON record instead of the text report");
        sub.add_option("--json-out", m_cfg.json_out, "Also write the JSON record to this file");
        m_seed_option = sub.add_option("--seed", m_cfg.seed, "Replay: use this seed for the drawn gate trial instead of drawing one")
                            ->type_name("UINT")
                            ->check(seed_option());
        sub.add_option("--timeout", m_cfg.timeout_s, "Wall-clock limit per runner process, seconds")
            ->check(seconds_option())
            ->capture_default_str();
        add_runner_limit_options(sub, m_cfg.options);
        sub.add_flag("--no-bench", m_cfg.no_bench, "Gate only");
        add_held_out_option(sub, m_cfg.options);
        add_stopping_rule_options(sub, m_cfg.options.stop, timed_sides::one);
        add_check_every_option(sub, m_cfg.options.check_every, timed_sides::one);
        add_require_quiet_option(sub, m_cfg.require_quiet, "exit 2 after the report");
        sub.add_option("--keep", m_cfg.keep_dir, "Keep the runner's job, events and logs in this directory");
        sub.add_option("--base", m_cfg.base,
                       "After a green verify, compare against this version as `kloop compare` does: a source file if "
                       "that path exists, else a git ref of the candidate's repository (checked out into a temporary "
                       "worktree, removed afterwards); both gated, then timed interleaved in one runner. The comparison "
                       "is printed after the report (--json: under the key \"compare\")");
    }

    int do_execute(const invocation& inv) override {
        auto& c = m_cfg;
        const auto spec = spec::load_op_spec(c.op_dir);
        if (!std::filesystem::exists(c.candidate))
            throw usage_error("option --candidate '" + c.candidate + "': no such file");
        c.options.modes = c.modes;
        c.options.gate_k = c.gate_k;
        if (m_seed_option != nullptr && m_seed_option->count() > 0) c.options.seed = parse_seed(c.seed);
        c.options.timeout_s = c.timeout_s;
        c.options.bench = !c.no_bench;

        platform::posix_command_runner commands;
        std::optional<base_checkout> base;  // resolved first: a bad --base fails before any work
        if (!c.base.empty()) base.emplace(c.base, c.candidate, commands);
        std::optional<platform::scoped_temp_dir> scratch;
        std::filesystem::path scratch_dir;
        if (!c.keep_dir.empty()) {
            scratch_dir = std::filesystem::absolute(c.keep_dir);
            std::filesystem::create_directories(scratch_dir);
        } else {
            scratch.emplace("kloop-verify");
            scratch_dir = scratch->path();
        }
        progress_display progress(inv.err, c.json);
        c.options.progress = progress.sink();
        const eval::evaluation_context ctx{spec, std::filesystem::absolute(c.candidate), c.options, commands,
                                           platform::cache_dir(), scratch_dir};
        auto result = eval::evaluate(ctx);
        result.candidate = c.candidate;
        result.command_line = inv.argv;

        auto record = report::to_json(result);
        std::optional<eval::ab_evaluation> ab;
        if (base && result.status == eval::disposition::passed) {
            ab = compare_with_base(spec, *base, c.candidate, c.candidate, c.options, measure::ab_config{}, inv.argv,
                                   c.keep_dir.empty() ? std::string() : (std::filesystem::path(c.keep_dir) / "compare").string(),
                                   commands);
            record["compare"] = report::to_json(*ab);
        }
        progress.finish();
        if (!c.json_out.empty()) platform::write_file_atomic(c.json_out, record.dump(2) + "\n");
        if (c.json) inv.out << record.dump(2) << "\n";
        else inv.out << report::to_text(result);
        if (ab && !c.json) inv.out << "\n" << report::to_text(*ab);
        else if (!c.base.empty() && !c.json) inv.out << "\ncompare: not run (the candidate is not green)\n";

        switch (result.status) {
            case eval::disposition::passed: {
                const int code = ab ? compare_exit_code(*ab) : static_cast<int>(exit_code::success);
                const int after_bench = refuse_busy(c.require_quiet, result.bench.host_load, inv.err, code);
                return ab ? refuse_busy(c.require_quiet, ab->host_load, inv.err, after_bench) : after_bench;
            }
            case eval::disposition::gate_failed: return static_cast<int>(exit_code::gate_red);
            case eval::disposition::build_failed: return static_cast<int>(exit_code::build_failed);
        }
        return static_cast<int>(exit_code::internal_error);
    }

private:
    verify_config m_cfg;
    CLI::Option* m_seed_option = nullptr;
};

}  // namespace

std::unique_ptr<command_base> make_verify_command() { return std::make_unique<verify_command>(); }

}  // namespace kloop::cli
