// kloop cli: the base of an A/B comparison, from `--base FILE|REF`.
//
// Responsibility: turn --base into a source file. An existing path is used as it is. Anything
// else is a git ref of the candidate's repository: the ref is resolved to a commit, checked out
// into a temporary detached worktree (`git worktree add --detach`), and the base is the
// candidate's path relative to the repository's top level, inside that worktree. The worktree
// and its temporary directory are always removed when the object goes (`git worktree remove
// --force`, `git worktree prune`, then the directory), also when a later step throws or the
// user interrupts; a ref that does not resolve leaves nothing behind. Every git call goes
// through platform::command_runner_base with an argv vector.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"

namespace kloop::cli {

class base_checkout {
public:
    // Throws kloop::usage_error naming --base and the value: not a file and not in a git
    // repository, a ref that does not resolve to a commit, the candidate's file missing at
    // that ref, or a worktree git cannot create.
    base_checkout(const std::string& base_arg, const std::filesystem::path& candidate,
                  platform::command_runner_base& runner);
    ~base_checkout();
    base_checkout(const base_checkout&) = delete;
    base_checkout& operator=(const base_checkout&) = delete;

    // The base source file to build.
    [[nodiscard]] const std::filesystem::path& get_path() const { return m_path; }
    // The path as given, or "<ref>:<path relative to the top level>" (ref as given).
    [[nodiscard]] const std::string& get_label() const { return m_label; }
    [[nodiscard]] bool is_ref() const { return m_worktree != nullptr; }

private:
    // Owns one worktree: removes it (and prunes) in its destructor.
    struct worktree_guard {
        worktree_guard(platform::command_runner_base& r, std::filesystem::path top, std::filesystem::path d)
            : runner(r), toplevel(std::move(top)), dir(std::move(d)) {}
        worktree_guard(const worktree_guard&) = delete;  // exactly one owner removes the worktree
        worktree_guard& operator=(const worktree_guard&) = delete;
        ~worktree_guard();

        platform::command_runner_base& runner;
        std::filesystem::path toplevel;
        std::filesystem::path dir;
    };

    std::filesystem::path m_path;
    std::string m_label;
    std::unique_ptr<platform::scoped_temp_dir> m_tmp;  // destroyed after the worktree
    std::unique_ptr<worktree_guard> m_worktree;
};

}  // namespace kloop::cli
