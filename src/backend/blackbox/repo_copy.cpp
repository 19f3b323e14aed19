// kloop backend/blackbox: the temporary copy a black-box run works in (see repo_copy.hpp).
#include "backend/blackbox/repo_copy.hpp"

#include <algorithm>
#include <system_error>

#include "core/error.hpp"
#include "platform/sha256.hpp"

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

namespace {

// Every entry of `root` a copy holds, in a fixed (sorted) order, with its path relative to root;
// the left-out ones are reported to `skipped`. `self`: a directory (the copy being made) never
// entered.
template <class Visit, class Skip>
void walk_repository(const fs::path& root, const std::vector<fs::path>& exclude, const fs::path& self,
                     const Visit& visit, const Skip& skipped) {
    std::vector<fs::path> excluded;
    for (const auto& e : exclude) excluded.push_back((root / e).lexically_normal());
    std::error_code ec;
    const fs::path self_canonical = self.empty() ? fs::path() : fs::weakly_canonical(self, ec);
    std::vector<fs::path> pending{root};
    while (!pending.empty()) {
        const fs::path dir = pending.back();
        pending.pop_back();
        std::vector<fs::directory_entry> entries;
        fs::directory_iterator it(dir, ec);
        if (ec) fail("read", dir, ec);
        for (const fs::directory_iterator end; it != end; it.increment(ec)) {
            if (ec) fail("read", dir, ec);
            entries.push_back(*it);
        }
        std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.path() < b.path(); });
        std::vector<fs::path> subdirs;
        for (const auto& entry : entries) {
            const fs::path& src = entry.path();
            const fs::path rel = src.lexically_relative(root);
            const fs::file_status st = entry.symlink_status(ec);
            if (ec) fail("inspect", src, ec);
            bool listed = std::find(excluded.begin(), excluded.end(), src.lexically_normal()) != excluded.end();
            if (!listed && fs::is_directory(st) && !self_canonical.empty()) listed = fs::weakly_canonical(src, ec) == self_canonical;
            if (listed || is_always_excluded(src)) {
                skipped(rel);
                continue;
            }
            visit(src, rel, st);
            if (fs::is_directory(st)) subdirs.push_back(src);
        }
        // Depth-first in name order: the parent is visited before its entries.
        for (auto d = subdirs.rbegin(); d != subdirs.rend(); ++d) pending.push_back(*d);
    }
}

}  // namespace

copy_stats copy_repository(const fs::path& root, const fs::path& dest, const std::vector<fs::path>& exclude) {
    copy_stats stats;
    std::error_code ec;
    fs::create_directories(dest, ec);
    if (ec) fail("create", dest, ec);
    walk_repository(
        root, exclude, dest,
        [&](const fs::path& src, const fs::path& rel, const fs::file_status& st) {
            const fs::path to = dest / rel;
            std::error_code e;
            if (fs::is_symlink(st)) {
                fs::copy_symlink(src, to, e);
                if (e) fail("copy the link", src, e);
                ++stats.links;
            } else if (fs::is_directory(st)) {
                fs::create_directory(to, e);
                if (e) fail("create", to, e);
            } else if (fs::is_regular_file(st)) {
                fs::copy_file(src, to, fs::copy_options::overwrite_existing, e);
                if (e) fail("copy", src, e);
                ++stats.files;
                stats.bytes += fs::file_size(src, e);
            } else {
                stats.skipped.push_back(rel.string());
            }
        },
        [&](const fs::path& rel) { stats.skipped.push_back(rel.string()); });
    return stats;
}

std::string tree_digest(const fs::path& root, const std::vector<fs::path>& exclude, const fs::path& target,
                        const fs::path& candidate, const fs::path& self) {
    std::string listing;
    const fs::path target_rel = target.lexically_normal();
    bool placed = false;
    walk_repository(
        root, exclude, self,
        [&](const fs::path& src, const fs::path& rel, const fs::file_status& st) {
            std::error_code e;
            if (rel.lexically_normal() == target_rel) {
                listing += "F " + rel.generic_string() + " " + platform::sha256_file(candidate) + "\n";
                placed = true;
            } else if (fs::is_symlink(st)) {
                listing += "L " + rel.generic_string() + " " + fs::read_symlink(src, e).generic_string() + "\n";
            } else if (fs::is_directory(st)) {
                listing += "D " + rel.generic_string() + "\n";
            } else if (fs::is_regular_file(st)) {
                listing += "F " + rel.generic_string() + " " + platform::sha256_file(src) + "\n";
            }
        },
        [](const fs::path&) {});
    if (!placed) listing += "F " + target_rel.generic_string() + " " + platform::sha256_file(candidate) + "\n";
    return platform::sha256_hex(listing);
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
