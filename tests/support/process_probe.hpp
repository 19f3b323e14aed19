// Test helper: what tests that start processes ask about them — a file's whole text (a pid a
// child wrote, a log) and whether a process still runs.
#pragma once

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/types.h>

namespace kloop::testing {

inline std::string read_all(const std::filesystem::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Gone, or a zombie nobody has reaped yet: either way it runs no more.
inline bool process_is_dead(pid_t pid) {
    if (::kill(pid, 0) != 0) return true;
    const std::string stat = read_all("/proc/" + std::to_string(pid) + "/stat");
    const auto close_paren = stat.rfind(')');
    return close_paren == std::string::npos || (close_paren + 2 < stat.size() && stat[close_paren + 2] == 'Z');
}

}  // namespace kloop::testing
