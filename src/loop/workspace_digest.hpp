// kloop loop: the workspace's content, fingerprinted, so a change nobody was allowed to make is seen.
//
// Responsibility: before `kloop run` hands the machine to a proposer, it digests every file of
// the workspace (records, contract, logs, the run journal); afterwards it digests again and
// names each file the proposer added, removed or changed. The proposer's own output directory
// (and the workspace lock) are left out: writing there is its job. A symbolic link is digested
// as its target path, so re-pointing one is a change too.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace kloop::loop {

struct workspace_digest {
    std::map<std::string, std::string> files;  // path relative to the root -> sha256 (or "link:<target>")
};

// Every file under `root` except those under an `excluded` directory and the `.lock` file.
[[nodiscard]] workspace_digest digest_workspace(const std::filesystem::path& root,
                                                const std::vector<std::filesystem::path>& excluded);

// "added iter_v9/benchmark_result.json", "changed OPT_LOG.md", "removed iter_v2/kernel.cpp"; empty
// when equal.
[[nodiscard]] std::vector<std::string> digest_changes(const workspace_digest& before, const workspace_digest& after);

}  // namespace kloop::loop
