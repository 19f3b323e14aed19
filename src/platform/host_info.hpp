// kloop platform: facts about the host recorded with every run (CPU, cache, git state).
//
// Responsibility: read-only queries of /proc, /sys and git. None of them throws: a fact that
// cannot be read gets its documented fallback, so a record can always be written.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace kloop::platform {

class command_runner_base;

// /proc/cpuinfo "model name" (falls back to "Hardware"/"cpu model" lines, then "unknown").
[[nodiscard]] std::string cpu_model();

// The largest cache level's size from /sys/devices/system/cpu/cpu0/cache/index*/{level,size,type}
// (instruction caches ignored); 32 MiB when unreadable. Used to size the CPU cache flush.
[[nodiscard]] std::size_t last_level_cache_bytes();

// Online logical CPUs (sysconf), at least 1.
[[nodiscard]] unsigned logical_cpus();

// Physical memory (sysconf), bytes; 0 when unknown.
[[nodiscard]] std::size_t physical_memory_bytes();

struct git_state {
    bool available = false;  // a git work tree with at least one commit
    std::string commit;      // 40 hex characters (HEAD)
    bool dirty = false;      // tracked files modified (untracked files ignored); true when unknown
    std::string toplevel;    // the work tree's root
};

// Runs `git -C dir rev-parse --show-toplevel`, `rev-parse --verify HEAD` and
// `status --porcelain --untracked-files=no` through `runner` (GIT_OPTIONAL_LOCKS=0, so it
// never takes the index lock). Not a repository, no commit yet, no git, or any failure:
// available=false. Never throws.
[[nodiscard]] git_state git_state_of(const std::filesystem::path& dir, command_runner_base& runner);

}  // namespace kloop::platform
