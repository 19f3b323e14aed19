// kloop platform: scratch directories owned by a live kloop, and the removal of a dead one's.
//
// Responsibility: scoped_temp_dir removes its directory when kloop ends; a kloop that is
// SIGKILLed (or dies any other way) cannot, and would leave its jobs, events, logs, candidate
// copies and build outputs behind. So every scratch directory is claimed: `<dir>.owner` beside
// it, flock(2)ed for as long as its kloop lives (the kernel releases the lock however the
// process ends; the file is locked before it gets its name, so a claim is never seen unlocked).
// sweep_stale_scratch_dirs(), run by every kloop command before its work, takes each
// `kloop*.owner` of the temp directory whose lock it can get — its owner is dead — kills what
// still runs inside that directory (a kloop-runner or candidate host whose working directory
// it is: they die with kloop, this is the net under it), and removes both.
#pragma once

#include <filesystem>

namespace kloop::platform {

// Claims `dir` for this process; returns the lock's descriptor (close-on-exec), or -1 when the
// claim could not be made (the directory is then only never swept).
[[nodiscard]] int claim_scratch_dir(const std::filesystem::path& dir);
// Gives a claim up: removes `<dir>.owner` and closes `fd` (the directory itself is left alone).
void release_scratch_claim(const std::filesystem::path& dir, int fd);

struct sweep_result {
    int directories_removed = 0;
    int processes_killed = 0;
};

// The sweep, over `temp_root` (default: the system temp directory, as scoped_temp_dir uses).
// Never throws: what cannot be removed is left for the next sweep.
sweep_result sweep_stale_scratch_dirs(const std::filesystem::path& temp_root = {});

}  // namespace kloop::platform
