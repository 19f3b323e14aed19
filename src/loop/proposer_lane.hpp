// kloop loop: a proposer's own copy of the kernel's directory, for `kloop run --parallel`.
//
// Responsibility: proposers of one round run at once, so none may edit the kernel file in place.
// Each gets a lane: <attempt>/lane/, a copy of the directory that holds the kernel file (the
// best version's sources already put back there), so a proposer that reads the op's other files,
// copies a version or builds beside the kernel finds them at the same relative paths. Left out
// of the copy: entries whose name starts with '.' (.git, caches), the workspace itself when it
// lies inside that directory, and anything but regular files and directories (a symbolic link is
// copied as the file it names when that is a regular file inside the directory, else left out).
// A directory too large to copy per proposer (more than max_files files or max_bytes bytes) is a
// kloop::usage_error naming --parallel and the directory.
#pragma once

#include <cstdint>
#include <filesystem>

namespace kloop::loop {

struct lane_limits {
    std::size_t max_files = 20000;
    std::uintmax_t max_bytes = std::uintmax_t{512} << 20;
};

// Copies `kernel_dir` into `lane` (created; must not exist yet), leaving out `workspace` and
// what the header says. Returns the path the kernel file `kernel` has in the lane.
std::filesystem::path make_proposer_lane(const std::filesystem::path& kernel, const std::filesystem::path& workspace,
                                         const std::filesystem::path& lane, const lane_limits& limits = {});

}  // namespace kloop::loop
