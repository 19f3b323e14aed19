// kloop backend/blackbox: the temporary copy a black-box run works in (see repo_copy.hpp).
#include "backend/blackbox/repo_copy.hpp"

#include <algorithm>
#include <system_error>

#include "core/error.hpp"

namespace kloop::backend::blackbox {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& what, const fs::path& p, const std::error_code& ec) {
    throw usage_error("cannot " + what + " '" + p.string() + "' into the temporary copy of the repository: " + ec.message());
}

}  // namespace

bool is_always_excluded(const fs::path& entry) {
    const std::string name = entry.filename().string();
    if (name == ".git" || name == "__pycache__" || name == ".pytest_cache") return true;
    std::error_code ec;
    return fs::is_directory(entry, ec) && fs::is_regular_file(entry / "contract.json", ec) &&
           fs::is_regular_file(entry / "OPT_LOG.md", ec);
}

copy_stats copy_repository(const fs::path& root, const fs::path& dest, const std::vector<fs::path>& exclude) {
    copy_stats stats;
    std::error_code ec;
    fs::create_directories(dest, ec);
    if (ec) fail("create", dest, ec);
    std::vector<fs::path> excluded;
    for (const auto& e : exclude) excluded.push_back((root / e).lexically_normal());
    // A scratch directory inside the repository (--keep ./dir) must not copy itself forever.
    const fs::path dest_canonical = fs::weakly_canonical(dest, ec);

    fs::recursive_directory_iterator it(root, fs::directory_options::none, ec);
    if (ec) fail("read", root, ec);
    for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
        if (ec) fail("read", it->path(), ec);
        const fs::path& src = it->path();
        const fs::path rel = src.lexically_relative(root);
        bool listed = std::find(excluded.begin(), excluded.end(), src.lexically_normal()) != excluded.end();
        if (!listed && it->is_directory(ec) && !it->is_symlink(ec)) listed = fs::weakly_canonical(src, ec) == dest_canonical;
        if (listed || is_always_excluded(src)) {
            stats.skipped.push_back(rel.string());
            if (it->is_directory(ec) && !it->is_symlink(ec)) it.disable_recursion_pending();
            continue;
        }
        const fs::path to = dest / rel;
        const fs::file_status st = it->symlink_status(ec);
        if (ec) fail("inspect", src, ec);
        if (fs::is_symlink(st)) {
            fs::copy_symlink(src, to, ec);
            if (ec) fail("copy the link", src, ec);
            ++stats.links;
        } else if (fs::is_directory(st)) {
            fs::create_directory(to, ec);
            if (ec) fail("create", to, ec);
        } else if (fs::is_regular_file(st)) {
            fs::copy_file(src, to, fs::copy_options::overwrite_existing, ec);
            if (ec) fail("copy", src, ec);
            ++stats.files;
            stats.bytes += fs::file_size(src, ec);
        } else {
            stats.skipped.push_back(rel.string());
        }
    }
    return stats;
}

void place_candidate(const fs::path& candidate, const fs::path& copy_root, const fs::path& target) {
    const fs::path to = copy_root / target;
    std::error_code ec;
    fs::create_directories(to.parent_path(), ec);
    if (ec) fail("create", to.parent_path(), ec);
    // A link in the copy would point back into the user's repository: replace it by the file.
    if (fs::is_symlink(fs::symlink_status(to, ec))) fs::remove(to, ec);
    fs::copy_file(candidate, to, fs::copy_options::overwrite_existing, ec);
    if (ec) throw usage_error("cannot place the candidate '" + candidate.string() + "' at '" + to.string() + "': " + ec.message());
}

}  // namespace kloop::backend::blackbox
