// kloop backend/blackbox: running one command of a black-box op in fresh copies of its repository.
//
// Responsibility: the mechanics every gate and bench run shares — copy the repository root
// (repo_copy), place the candidate at the spec's target, hash the frozen files in the copy, run
// the command under its clean environment (gate_env) through kloop's subprocess layer with its
// timeout and log files, re-hash the frozen files, delete the copy. `run` does it for one side
// (the command's working directory inside the copy); `run_sides` for both sides of an A/B in one
// process (two copies; the command runs from a neutral directory and finds the copies in
// KLOOP_BENCH_SIDES, docs/blackbox.md "One process, two sides").
//
// Where copies live: under the scratch directory, or — in a loop, where the workspace lock
// serialises the runs — at stable paths named by the candidate's content (<state_dir>/copies/
// repo-<sha256 prefix>, state_dir being the workspace's .cache), so the same code is always
// imported from the same path and caches keyed on a file's path (Inductor's, a JIT's) hit
// across iterations. Each run still gets a fresh copy. The workspace (state_dir's parent) is
// never copied, even before `kloop init` has made it recognisable; nor are the files the caller
// names (the loop's proposal).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "backend/blackbox/gate_env.hpp"
#include "eval/record/repository_run.hpp"
#include "platform/subprocess.hpp"
#include "spec/op_spec.hpp"

namespace kloop::backend::blackbox {

class copy_runner {
public:
    // state_dir: empty = copies under `scratch`, named by the run. leave_out: files (absolute, or
    // relative to the working directory) no copy holds where they lie inside the repository.
    copy_runner(const spec::op_spec& spec, platform::command_runner_base& commands, std::filesystem::path scratch,
                const std::filesystem::path& state_dir = {}, const std::vector<std::filesystem::path>& leave_out = {});

    [[nodiscard]] const std::vector<std::string>& refused() const { return m_refused; }

    // The clean environment of `cmd`; throws usage_error for a refused variable.
    [[nodiscard]] clean_env environment_for(const spec::blackbox_command& cmd, const env_list& kloop_set) const;

    struct outcome {
        eval::command_run run;
        std::string stdout_text;                   // the tail of the whole stdout (4 MiB)
        std::string stderr_text;
        std::vector<std::string> frozen_changed;   // frozen files the run modified in a copy
        std::size_t copied_files = 0;
    };

    // Copies the repository, places the candidate, runs `argv` there (in the command's cwd),
    // removes the copy. Throws usage_error when the program cannot start, kloop::error
    // (interrupted) on SIGINT.
    outcome run(const spec::blackbox_command& cmd, const std::vector<std::string>& argv, const clean_env& env,
                const std::filesystem::path& candidate, double timeout_s, const std::string& what);

    // One copy per side (sides[i].first names it, .second is its candidate file), `argv` run
    // from an empty directory with KLOOP_BENCH_SIDES = [{"name", "root"}, ...] in that order.
    outcome run_sides(const spec::blackbox_command& cmd, const std::vector<std::string>& argv, const clean_env& env,
                      const std::vector<std::pair<std::string, std::filesystem::path>>& sides, double timeout_s,
                      const std::string& what);

    // repo_copy's tree_digest of a copy with `candidate` placed (the same exclusions as a copy).
    [[nodiscard]] std::string tree_digest(const std::filesystem::path& candidate) const;

    // Where `candidate` is copied to for a run labelled `label`.
    [[nodiscard]] std::filesystem::path copy_path(const std::filesystem::path& candidate, const std::string& label) const;

private:
    struct prepared_copy {
        std::filesystem::path root;
        std::vector<std::pair<std::filesystem::path, std::string>> frozen_sha;  // relative path, sha256
        std::size_t files = 0;
    };
    prepared_copy prepare(const std::filesystem::path& candidate, const std::filesystem::path& copy);
    void collect_frozen_changes(const prepared_copy& c, std::vector<std::string>& changed) const;
    outcome execute(const spec::blackbox_command& cmd, const std::vector<std::string>& argv, const clean_env& env,
                    const std::filesystem::path& cwd, double timeout_s, const std::string& what, const std::string& label);

    const spec::op_spec& m_spec;
    const spec::blackbox_spec& m_bb;
    platform::command_runner_base& m_commands;
    std::filesystem::path m_scratch;
    std::filesystem::path m_copies;
    std::vector<std::string> m_refused;
    std::vector<std::filesystem::path> m_exclude;
    std::vector<std::filesystem::path> m_frozen_rel;
    int m_counter = 0;
};

}  // namespace kloop::backend::blackbox
