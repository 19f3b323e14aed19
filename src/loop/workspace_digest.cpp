// kloop loop: the workspace's content, fingerprinted (see workspace_digest.hpp).
#include "loop/workspace_digest.hpp"

#include "platform/sha256.hpp"

namespace fs = std::filesystem;

namespace kloop::loop {

namespace {

bool is_under(const fs::path& p, const std::vector<fs::path>& dirs) {
    for (const auto& d : dirs) {
        const auto rel = p.lexically_relative(d);
        if (!rel.empty() && *rel.begin() != "..") return true;
    }
    return false;
}

}  // namespace

workspace_digest digest_workspace(const fs::path& root, const std::vector<fs::path>& excluded) {
    workspace_digest d;
    std::vector<fs::path> skip;
    for (const auto& e : excluded) skip.push_back(fs::absolute(e).lexically_normal());
    const fs::path base = fs::absolute(root).lexically_normal();
    for (auto it = fs::recursive_directory_iterator(base, fs::directory_options::none); it != fs::recursive_directory_iterator();
         ++it) {
        const fs::path p = it->path().lexically_normal();
        if (is_under(p, skip) || p == base / ".lock") {
            std::error_code ec;
            if (it->is_directory(ec) && !it->is_symlink(ec)) it.disable_recursion_pending();
            continue;
        }
        const std::string rel = p.lexically_relative(base).generic_string();
        if (it->is_symlink()) d.files[rel] = "link:" + fs::read_symlink(p).string();
        else if (it->is_regular_file()) d.files[rel] = platform::sha256_file(p);
    }
    return d;
}

std::vector<std::string> digest_changes(const workspace_digest& before, const workspace_digest& after) {
    std::vector<std::string> out;
    for (const auto& [path, hash] : before.files) {
        const auto it = after.files.find(path);
        if (it == after.files.end()) out.push_back("removed " + path);
        else if (it->second != hash) out.push_back("changed " + path);
    }
    for (const auto& [path, hash] : after.files)
        if (!before.files.count(path)) out.push_back("added " + path);
    return out;
}

}  // namespace kloop::loop
