// kloop backend/blackbox: how a candidate enters a black-box repository — a temporary copy.
//
// Responsibility: the user's repository is never written. Every gate or bench run of a
// black-box op happens in a fresh copy of the repository root (under kloop's scratch
// directory), with the candidate file copied over the spec's target path in that copy. A crash,
// a hang, a SIGINT or a SIGKILL of kloop can therefore never lose or damage the user's kernel
// file: the worst left behind is a stale copy under the temp directory.
//
// What is not copied: `.git` (the copy is not a checkout), `__pycache__`, `.pytest_cache`,
// kloop workspaces (a directory holding both contract.json and OPT_LOG.md — they grow with
// every iteration and are never what a gate reads), and the spec's `[repo] exclude` paths.
// Symbolic links are copied as links; sockets and FIFOs are skipped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kloop::backend::blackbox {

struct copy_stats {
    std::size_t files = 0;
    std::size_t links = 0;
    std::uintmax_t bytes = 0;
    std::vector<std::string> skipped;   // relative paths left out, for the record
};

// true for the directories every copy leaves out (.git, caches, kloop workspaces).
[[nodiscard]] bool is_always_excluded(const std::filesystem::path& entry);

// Copies `root` into `dest` (created; must not exist or be empty). `exclude` holds paths
// relative to root. Throws kloop::usage_error naming the path and the OS reason.
copy_stats copy_repository(const std::filesystem::path& root, const std::filesystem::path& dest,
                           const std::vector<std::filesystem::path>& exclude);

// SHA-256 (hex) of what a copy of `root` with `candidate` placed at `target` holds: every entry a
// copy would hold (the same exclusions; `self` never entered), in name order, by relative path
// and content (files), link target (links) or presence (directories). Two copies with the same
// digest hold the same bytes at the same paths.
[[nodiscard]] std::string tree_digest(const std::filesystem::path& root, const std::vector<std::filesystem::path>& exclude,
                                      const std::filesystem::path& target, const std::filesystem::path& candidate,
                                      const std::filesystem::path& self = {});

// Copies the candidate's bytes over `copy_root / target` (parents created). Throws
// kloop::usage_error naming the path and the OS reason.
void place_candidate(const std::filesystem::path& candidate, const std::filesystem::path& copy_root,
                     const std::filesystem::path& target);

}  // namespace kloop::backend::blackbox
