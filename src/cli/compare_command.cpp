// kloop cli: `kloop compare <op-dir> --candidate FILE --base FILE|REF [--json] [--min-effect X] ...`
#include "cli/compare_command.hpp"

#include <CLI/CLI.hpp>

#include <optional>
#include <ostream>

#include "cli/base_checkout.hpp"
#include "cli/loop_options.hpp"
#include "cli/option_checks.hpp"
#include "cli/progress_display.hpp"
#include "cli/timing_options.hpp"
#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"
#include "platform/subprocess.hpp"
#include "report/ab_json.hpp"
#include "report/ab_text.hpp"
#include "spec/spec_loader.hpp"

namespace kloop::cli {

namespace fs = std::filesystem;

void declare_ab_timing_options(CLI::App& sub, eval::evaluation_options& o) {
    add_held_out_option(sub, o);
    sub.add_option("--mode", o.modes, "Mode to compare (repeatable; default: every mode in the spec)");
    sub.add_option("--shape", o.bench_shapes,
                   "Bench shape to time (repeatable; default: every bench shape); the gate is unchanged");
    sub.add_option("--timeout", o.timeout_s,
                   "Wall-clock limit per gate runner, seconds; the A/B runner gets this plus 2 x --max-time + 10 s "
                   "per shape")
        ->check(seconds_option())
        ->capture_default_str();
    add_runner_limit_options(sub, o);
    add_stopping_rule_options(sub, o.stop, timed_sides::two);
    add_check_every_option(sub, o.check_every, timed_sides::two);
}

eval::ab_evaluation compare_with_base(const spec::op_spec& spec, const std::string& base_arg, const fs::path& candidate,
                                      const std::string& candidate_label, const eval::evaluation_options& options,
                                      const measure::ab_config& config, const std::vector<std::string>& command_line,
                                      const std::string& keep_dir) {
    platform::posix_command_runner commands;
    const base_checkout base(base_arg, candidate, commands);  // removed at scope exit, whatever happens
    return compare_with_base(spec, base, candidate, candidate_label, options, config, command_line, keep_dir, commands);
}

eval::ab_evaluation compare_with_base(const spec::op_spec& spec, const base_checkout& base, const fs::path& candidate,
                                      const std::string& candidate_label, const eval::evaluation_options& options,
                                      const measure::ab_config& config, const std::vector<std::string>& command_line,
                                      const std::string& keep_dir, platform::command_runner_base& commands) {
    std::optional<platform::scoped_temp_dir> scratch;
    fs::path scratch_dir;
    if (!keep_dir.empty()) {
        scratch_dir = fs::absolute(keep_dir);
        platform::ensure_directory(scratch_dir);
    } else {
        scratch.emplace("kloop-compare");
        scratch_dir = scratch->path();
    }
    const eval::ab_context ctx{spec,     base.get_path(), fs::absolute(candidate), options, config, commands,
                               platform::cache_dir(), scratch_dir};
    auto ab = eval::compare_candidates(ctx);
    ab.base_label = base.get_label();
    ab.candidate_label = candidate_label;
    ab.base.candidate = base.get_label();
    ab.candidate.candidate = candidate_label;
    ab.command_line = command_line;
    ab.base.command_line = command_line;
    ab.candidate.command_line = command_line;
    return ab;
}

int compare_exit_code(const eval::ab_evaluation& ab) {
    using eval::disposition;
    if (ab.base.status == disposition::build_failed || ab.candidate.status == disposition::build_failed)
        return static_cast<int>(exit_code::build_failed);
    if (ab.base.status != disposition::passed || ab.candidate.status != disposition::passed || !ab.ok)
        return static_cast<int>(exit_code::gate_red);
    return static_cast<int>(exit_code::success);
}

namespace {

struct compare_config {
    std::string op_dir;
    std::string candidate;
    std::string base;
    bool json = false;
    std::string json_out;
    std::string seed;                      // --seed, checked by seed_option()
    std::string keep_dir;
    eval::evaluation_options options;
    measure::ab_config ab;
    bool require_quiet = false;            // --require-quiet
};

class compare_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        sub.add_option("op-dir", m_cfg.op_dir, "Op directory holding op.toml (or the op.toml itself)")->required();
        sub.add_option("--candidate", m_cfg.candidate, "The new version: a source file (.cpp for the cpu backend)")
            ->required();
        sub.add_option("--base", m_cfg.base,
                       "The version to compare against: a source file if that path exists, else a git ref (HEAD, "
                       "HEAD~1, a branch, a tag, a commit) of the candidate's repository, whose copy of the "
                       "candidate's file is checked out into a temporary worktree that is removed afterwards")
            ->required();
        sub.add_flag("--json", m_cfg.json, "Print the JSON record (schema kloop.compare) instead of the table");
        sub.add_option("--json-out", m_cfg.json_out, "Also write the JSON record to this file");
        add_min_effect_options(sub, m_cfg.ab);
        add_require_quiet_option(sub, m_cfg.require_quiet, "exit 2 after the report");
        m_seed_option = sub.add_option("--seed", m_cfg.seed,
                                       "Replay: use this seed for the drawn gate trial of both sides (and the A/B "
                                       "inputs derived from it) instead of drawing one")
                            ->type_name("UINT")
                            ->check(seed_option());
        declare_ab_timing_options(sub, m_cfg.options);
        sub.add_option("--keep", m_cfg.keep_dir, "Keep the runners' jobs, events and logs in this directory");
    }

    int do_execute(const invocation& inv) override {
        auto& c = m_cfg;
        const auto spec = spec::load_op_spec(c.op_dir);
        if (!fs::exists(c.candidate)) throw usage_error("option --candidate '" + c.candidate + "': no such file");
        if (m_seed_option != nullptr && m_seed_option->count() > 0) c.options.seed = parse_seed(c.seed);
        progress_display progress(inv.err, c.json);
        c.options.progress = progress.sink();
        const auto ab = compare_with_base(spec, c.base, c.candidate, c.candidate, c.options, c.ab, inv.argv, c.keep_dir);
        progress.finish();
        const auto record = report::to_json(ab);
        if (!c.json_out.empty()) platform::write_file_atomic(c.json_out, record.dump(2) + "\n");
        if (c.json) inv.out << record.dump(2) << "\n";
        else inv.out << report::to_text(ab);
        return refuse_busy(m_cfg.require_quiet, ab.host_load, inv.err, compare_exit_code(ab));
    }

private:
    compare_config m_cfg;
    CLI::Option* m_seed_option = nullptr;
};

}  // namespace

std::unique_ptr<command_base> make_compare_command() { return std::make_unique<compare_command>(); }

}  // namespace kloop::cli
