// kloop loop: the workspace — its layout, its versioned records, its lock.
//
// Responsibility: where every file of one optimisation loop lives (default
// `<repo>/profile/<op>-opt/`, git-ignored), how the JSON records are written and read, and who
// may write. Layout:
//   contract.json          the frozen contract (loop/record/contract)
//   docs/draft.md          the task contract in prose
//   OPT_LOG.md             one row per iteration (report/opt_log)
//   TRAPS.md               known traps, Fact / Why / How to apply
//   dispatch.md            shape-specialised paths (report/dispatch)
//   run_manifest.json      index of the iterations, the best, the memory database
//   iter_vN/               one directory per iteration; v0 is the baseline (loop/record/iteration_record)
//   final_summary.md, final_result.json   `kloop report`;   nogo.json   `kloop nogo`
//   report.html            the page of the whole loop (`kloop show`, `kloop report --html`)
//   .lock                  flock(2) held by a writing command (released by the kernel on a kill);
//                          holds the holder's pid. `kloop init` takes it before it writes anything
//   .staging-*/evaluating.json   an iteration whose candidate is being evaluated (loop/evaluation_marker)
//   .staging-*             a directory being assembled; renamed into place when complete
//   .cache/                black-box ops: copies/ (the repository copies, at paths named by their
//                          content) and gates/ (green gates reused on byte-identical inputs)
// Every record is JSON written with platform::write_file_atomic and opens with a header:
//   schema_version, kind, kloop {version, commit, dirty}, command_line[], written_at,
//   repo {available, commit, dirty} (the candidate's repository)
// and read_record refuses a kind it does not expect or a schema_version outside
// [record_schema_min, record_schema_max]. An iteration directory appears in one rename, so a
// reader sees all of it or none of it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "platform/host_info.hpp"

namespace kloop::loop {

inline constexpr int record_schema_min = 1;
inline constexpr int record_schema_max = 1;
inline constexpr int record_schema_version = 1;

// What every record says about how it was made.
struct record_origin {
    std::vector<std::string> command_line;
    platform::git_state repo;
};

[[nodiscard]] nlohmann::json record_header(std::string_view kind, const record_origin& origin);
// Writes header + body (body's keys are merged after the header's) atomically.
void write_record(const std::filesystem::path& path, std::string_view kind, const nlohmann::json& body,
                  const record_origin& origin);
// Reads and validates the header; throws kloop::usage_error naming the file on a bad kind,
// schema or JSON.
[[nodiscard]] nlohmann::json read_record(const std::filesystem::path& path, std::string_view kind);

class workspace {
public:
    explicit workspace(std::filesystem::path root);

    [[nodiscard]] const std::filesystem::path& root() const { return m_root; }
    [[nodiscard]] std::filesystem::path contract_file() const { return m_root / "contract.json"; }
    [[nodiscard]] std::filesystem::path draft_file() const { return m_root / "docs" / "draft.md"; }
    [[nodiscard]] std::filesystem::path opt_log_file() const { return m_root / "OPT_LOG.md"; }
    [[nodiscard]] std::filesystem::path traps_file() const { return m_root / "TRAPS.md"; }
    [[nodiscard]] std::filesystem::path dispatch_file() const { return m_root / "dispatch.md"; }
    [[nodiscard]] std::filesystem::path manifest_file() const { return m_root / "run_manifest.json"; }
    [[nodiscard]] std::filesystem::path final_summary_file() const { return m_root / "final_summary.md"; }
    [[nodiscard]] std::filesystem::path final_result_file() const { return m_root / "final_result.json"; }
    [[nodiscard]] std::filesystem::path nogo_file() const { return m_root / "nogo.json"; }
    [[nodiscard]] std::filesystem::path report_page_file() const { return m_root / "report.html"; }
    [[nodiscard]] std::filesystem::path iteration_dir(int n) const;
    [[nodiscard]] std::filesystem::path lock_file() const { return m_root / ".lock"; }
    [[nodiscard]] std::filesystem::path state_dir() const { return m_root / ".cache"; }

    // The iteration numbers present (iter_vN directories), sorted. Throws kloop::usage_error
    // when they are not 0..k without gaps (someone deleted one by hand).
    [[nodiscard]] std::vector<int> list_iterations() const;
    // Removes what a killed command left (call with the lock held): .staging-* directories, and
    // the temporary files of atomic writes interrupted before their rename (".X.tmp-XXXXXX") in
    // the workspace and the directories directly in it.
    void remove_stale_staging() const;
    // A fresh .staging-<what>-<pid> directory inside the workspace.
    [[nodiscard]] std::filesystem::path make_staging_dir(std::string_view what) const;

private:
    std::filesystem::path m_root;
};

// `<dir's git toplevel>/profile/<op>-opt`, or `<dir>/profile/<op>-opt` outside a repository.
[[nodiscard]] std::filesystem::path default_workspace_root(const platform::git_state& repo,
                                                           const std::filesystem::path& dir, const std::string& op);

// The workspace a later command works on: `given` when set (must hold contract.json); else the
// single `profile/*-opt/` holding a contract.json under the current directory's git toplevel
// (or the current directory). Throws kloop::usage_error when none or several are found.
[[nodiscard]] std::filesystem::path find_workspace(const std::optional<std::filesystem::path>& given,
                                                   const platform::git_state& cwd_repo);

// flock(2) on the workspace's .lock (created with the directory): exclusive, non-blocking. A kill
// releases it. The holder writes its pid into the file.
class workspace_lock {
public:
    // Throws kloop::usage_error ("another kloop command (pid N) is writing to workspace '...'")
    // when held.
    explicit workspace_lock(const workspace& ws);
    // Non-throwing variant: is_held() tells.
    workspace_lock(const workspace& ws, std::nothrow_t);
    ~workspace_lock();
    workspace_lock(const workspace_lock&) = delete;
    workspace_lock& operator=(const workspace_lock&) = delete;
    [[nodiscard]] bool is_held() const { return m_fd >= 0; }

private:
    int m_fd = -1;
};

}  // namespace kloop::loop
