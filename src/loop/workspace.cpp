// kloop loop: workspace layout, records and lock (see workspace.hpp).
#include "loop/workspace.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <new>
#include <regex>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "kloop/version.hpp"
#include "platform/file_io.hpp"
#include "platform/utc_time.hpp"

namespace kloop::loop {

namespace fs = std::filesystem;
using nlohmann::json;


json record_header(std::string_view kind, const record_origin& origin) {
    return {{"schema_version", record_schema_version},
            {"kind", std::string(kind)},
            {"kloop", {{"version", build_info::version}, {"commit", build_info::git_commit}, {"dirty", build_info::git_dirty}}},
            {"command_line", origin.command_line},
            {"written_at", platform::utc_now_iso8601()},
            {"repo", {{"available", origin.repo.available}, {"commit", origin.repo.commit}, {"dirty", origin.repo.dirty}}}};
}

void write_record(const fs::path& path, std::string_view kind, const json& body, const record_origin& origin) {
    json j = record_header(kind, origin);
    for (const auto& [k, v] : body.items()) j[k] = v;
    platform::write_file_atomic(path, j.dump(2) + "\n");
}

json read_record(const fs::path& path, std::string_view kind) {
    const auto text = platform::read_file(path);
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        throw usage_error(fmt::format("workspace file '{}' is not a JSON object", path.string()));
    const int v = j.value("schema_version", -1);
    if (v < record_schema_min || v > record_schema_max)
        throw usage_error(fmt::format("workspace file '{}' has schema_version {}; this kloop reads {}..{}",
                                      path.string(), v, record_schema_min, record_schema_max));
    if (j.value("kind", "") != kind)
        throw usage_error(fmt::format("workspace file '{}' is a '{}' record; expected '{}'", path.string(),
                                      j.value("kind", ""), kind));
    return j;
}

workspace::workspace(fs::path root) : m_root(fs::absolute(std::move(root)).lexically_normal()) {}

fs::path workspace::iteration_dir(int n) const { return m_root / fmt::format("iter_v{}", n); }

std::vector<int> workspace::list_iterations() const {
    std::vector<int> found;
    static const std::regex pattern("^iter_v([0-9]+)$");
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(m_root, ec)) {
        std::smatch m;
        const auto name = entry.path().filename().string();
        if (entry.is_directory() && std::regex_match(name, m, pattern)) found.push_back(std::stoi(m[1].str()));
    }
    std::sort(found.begin(), found.end());
    for (std::size_t i = 0; i < found.size(); ++i)
        if (found[i] != static_cast<int>(i))
            throw usage_error(fmt::format("workspace '{}': iteration directories are not contiguous (iter_v{} is missing); "
                                          "they must be iter_v0 .. iter_vN",
                                          m_root.string(), i));
    return found;
}

namespace {
// ".OPT_LOG.md.tmp-Ab12Cd": the temporary file of a platform::write_file_atomic that was killed
// before its rename.
bool is_interrupted_write(const std::string& name) {
    const auto at = name.rfind(".tmp-");
    if (name.empty() || name[0] != '.' || at == std::string::npos || at == 0 || name.size() != at + 5 + 6) return false;
    return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(at + 5), name.end(),
                       [](unsigned char c) { return std::isalnum(c) != 0; });
}
}  // namespace

void workspace::remove_stale_staging() const {
    std::error_code ec;
    std::vector<fs::path> dirs = {m_root};
    for (const auto& entry : fs::directory_iterator(m_root, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.rfind(".staging-", 0) == 0) fs::remove_all(entry.path(), ec);
        else if (entry.is_directory(ec)) dirs.push_back(entry.path());
    }
    for (const auto& dir : dirs)
        for (const auto& entry : fs::directory_iterator(dir, ec))
            if (entry.is_regular_file(ec) && is_interrupted_write(entry.path().filename().string()))
                fs::remove(entry.path(), ec);
}

fs::path workspace::make_staging_dir(std::string_view what) const {
    const auto dir = m_root / fmt::format(".staging-{}-{}", what, ::getpid());
    std::error_code ec;
    fs::remove_all(dir, ec);
    platform::ensure_directory(dir);
    return dir;
}

fs::path default_workspace_root(const platform::git_state& repo, const fs::path& dir, const std::string& op) {
    const fs::path base = repo.available && !repo.toplevel.empty() ? fs::path(repo.toplevel) : fs::absolute(dir);
    return base / "profile" / (op + "-opt");
}

fs::path find_workspace(const std::optional<fs::path>& given, const platform::git_state& cwd_repo) {
    if (given) {
        const auto root = fs::absolute(*given);
        if (!fs::exists(root / "contract.json"))
            throw usage_error(fmt::format("workspace '{}' has no contract.json; run `kloop init` first", root.string()));
        return root;
    }
    const fs::path base = cwd_repo.available && !cwd_repo.toplevel.empty() ? fs::path(cwd_repo.toplevel) : fs::current_path();
    std::vector<fs::path> candidates;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(base / "profile", ec)) {
        const auto name = entry.path().filename().string();
        if (entry.is_directory() && name.size() > 4 && name.ends_with("-opt") && fs::exists(entry.path() / "contract.json"))
            candidates.push_back(entry.path());
    }
    if (candidates.empty())
        throw usage_error(fmt::format("no workspace found under '{}': run `kloop init <op-dir> --max-iterations N` "
                                      "or pass --workspace DIR",
                                      (base / "profile").string()));
    if (candidates.size() > 1) {
        std::string list;
        for (const auto& c : candidates) list += "\n  " + c.string();
        throw usage_error("several workspaces found; pass --workspace DIR:" + list);
    }
    return candidates.front();
}

namespace {

// Opens .lock and takes it; writes the holder's pid into it. -1 when another process holds it.
int open_and_lock(const workspace& ws) {
    platform::ensure_directory(ws.root());
    int fd = ::open(ws.lock_file().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        throw usage_error(fmt::format("cannot open file '{}': {}", ws.lock_file().string(), std::strerror(errno)));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd);
        return -1;
    }
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (::ftruncate(fd, 0) == 0) {
        [[maybe_unused]] const auto written = ::pwrite(fd, pid.data(), pid.size(), 0);
    }
    return fd;
}

// The pid the holder wrote into .lock; 0 when it cannot be read. A holder writes it right after
// taking the lock, so an empty file is read again for a moment.
long lock_holder_pid(const workspace& ws) {
    for (int attempt = 0; attempt < 100; ++attempt) {
        std::string text;
        try {
            text = platform::read_file(ws.lock_file());
        } catch (const std::exception&) {
            return 0;
        }
        char* end = nullptr;
        const long pid = std::strtol(text.c_str(), &end, 10);
        if (pid > 0 && end != text.c_str()) return pid;
        ::usleep(10000);
    }
    return 0;
}

}  // namespace

workspace_lock::workspace_lock(const workspace& ws) : m_fd(open_and_lock(ws)) {
    if (m_fd < 0) {
        const long holder = lock_holder_pid(ws);
        throw usage_error(fmt::format("another kloop command{} is writing to workspace '{}'; wait for it to finish",
                                      holder > 0 ? fmt::format(" (pid {})", holder) : std::string(),
                                      ws.root().string()));
    }
}

workspace_lock::workspace_lock(const workspace& ws, std::nothrow_t) {
    try {
        m_fd = open_and_lock(ws);
    } catch (...) {
        m_fd = -1;
    }
}

workspace_lock::~workspace_lock() {
    if (m_fd >= 0) ::close(m_fd);
}

}  // namespace kloop::loop
