// kloop loop: a proposer's lane (see proposer_lane.hpp).
#include "loop/proposer_lane.hpp"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "core/error.hpp"

namespace fs = std::filesystem;

namespace kloop::loop {

namespace {

bool inside(const fs::path& p, const fs::path& dir) {
    const auto rel = p.lexically_relative(dir);
    return !rel.empty() && *rel.begin() != "..";
}

}  // namespace

fs::path make_proposer_lane(const fs::path& kernel, const fs::path& workspace, const fs::path& lane,
                            const lane_limits& limits) {
    const fs::path dir = fs::weakly_canonical(fs::absolute(kernel)).parent_path();
    const fs::path ws = fs::weakly_canonical(fs::absolute(workspace));
    // Listed first, copied after: the limits hold before a byte is written.
    std::vector<std::pair<fs::path, fs::path>> files;  // source, path relative to dir
    std::vector<fs::path> dirs;
    std::uintmax_t bytes = 0;
    const auto too_large = [&](const std::string& what) {
        return usage_error(fmt::format("option --parallel: each proposer works in a copy of the kernel's directory '{}', "
                                       "which holds {} (at most {} files and {} MiB are copied); move the kernel file "
                                       "into a smaller directory, or run without --parallel",
                                       dir.string(), what, limits.max_files, limits.max_bytes >> 20));
    };
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const fs::path p = it->path();
        if (p.filename().string().rfind('.', 0) == 0 || p == ws || (inside(ws, dir) && inside(p, ws))) {
            if (it->is_directory()) it.disable_recursion_pending();
            continue;
        }
        const fs::path rel = p.lexically_relative(dir);
        std::error_code sec;
        if (it->is_symlink(sec)) {
            const fs::path target = fs::weakly_canonical(p, sec);
            if (!sec && fs::is_regular_file(target, sec) && inside(target, dir)) {
                files.emplace_back(target, rel);
                bytes += fs::file_size(target, sec);
            }
            continue;
        }
        if (it->is_directory(sec)) {
            dirs.push_back(rel);
        } else if (it->is_regular_file(sec)) {
            files.emplace_back(p, rel);
            bytes += it->file_size(sec);
        }
        if (files.size() > limits.max_files) throw too_large(fmt::format("more than {} files", limits.max_files));
        if (bytes > limits.max_bytes) throw too_large(fmt::format("more than {} MiB", limits.max_bytes >> 20));
    }
    if (ec) throw usage_error(fmt::format("cannot list the kernel's directory '{}': {}", dir.string(), ec.message()));
    fs::create_directories(lane);
    for (const auto& d : dirs) fs::create_directories(lane / d);
    for (const auto& [from, rel] : files) fs::copy_file(from, lane / rel, fs::copy_options::overwrite_existing);
    return lane / kernel.filename();
}

}  // namespace kloop::loop
