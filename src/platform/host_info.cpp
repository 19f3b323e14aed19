// kloop platform: host facts from /proc, /sys and git.
#include "platform/host_info.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <unistd.h>

#include "platform/subprocess.hpp"
#include "core/text.hpp"

namespace kloop::platform {

namespace fs = std::filesystem;

namespace {

std::string first_line_of(const fs::path& p) {
    std::ifstream in(p);
    std::string line;
    if (!in || !std::getline(in, line)) return {};
    return trimmed(line);
}

// "32K", "8192K", "1M", "2G" or plain bytes; 0 when malformed.
std::size_t parse_cache_size(const std::string& s) {
    std::size_t i = 0;
    std::size_t value = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) value = value * 10 + static_cast<std::size_t>(s[i++] - '0');
    if (i == 0) return 0;
    switch (i < s.size() ? std::toupper(static_cast<unsigned char>(s[i])) : 0) {
        case 'K': return value << 10;
        case 'M': return value << 20;
        case 'G': return value << 30;
        default: return value;
    }
}

}  // namespace

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line, fallback;
    while (std::getline(in, line)) {
        auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        std::string key = trimmed(line.substr(0, colon));
        std::string value = trimmed(line.substr(colon + 1));
        if (key == "model name" && !value.empty()) return value;
        if ((key == "Hardware" || key == "cpu model") && fallback.empty()) fallback = value;
    }
    return fallback.empty() ? std::string("unknown") : fallback;
}

std::size_t last_level_cache_bytes() {
    constexpr std::size_t fallback = std::size_t{32} << 20;
    const fs::path base = "/sys/devices/system/cpu/cpu0/cache";
    std::error_code ec;
    int best_level = -1;
    std::size_t best_size = 0;
    for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.rfind("index", 0) != 0) continue;
        if (first_line_of(it->path() / "type") == "Instruction") continue;
        std::string level_text = first_line_of(it->path() / "level");
        std::size_t size = parse_cache_size(first_line_of(it->path() / "size"));
        if (level_text.empty() || size == 0) continue;
        int level = 0;
        try {
            level = std::stoi(level_text);
        } catch (...) {
            continue;
        }
        if (level > best_level || (level == best_level && size > best_size)) {
            best_level = level;
            best_size = size;
        }
    }
    return best_size > 0 ? best_size : fallback;
}

unsigned logical_cpus() {
    long n = ::sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? static_cast<unsigned>(n) : 1U;
}

std::size_t physical_memory_bytes() {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : 0;
}

git_state git_state_of(const fs::path& dir, command_runner_base& runner) {
    git_state st;
    try {
        auto git = [&](std::vector<std::string> args) {
            process_request r;
            r.argv = {"git", "-C", dir.string()};
            r.argv.insert(r.argv.end(), args.begin(), args.end());
            r.env_overrides = {{"GIT_OPTIONAL_LOCKS", "0"}, {"LC_ALL", "C"}};
            r.timeout_s = 30;
            return runner.run(r);
        };
        auto top = git({"rev-parse", "--show-toplevel"});
        if (!top.succeeded()) return st;
        auto head = git({"rev-parse", "--verify", "--quiet", "HEAD"});
        if (!head.succeeded()) return st;
        std::string commit = trimmed(head.stdout_text);
        if (commit.size() < 40 ||
            !std::all_of(commit.begin(), commit.end(), [](unsigned char c) { return std::isxdigit(c) != 0; }))
            return st;
        auto status = git({"status", "--porcelain", "--untracked-files=no"});
        st.available = true;
        st.commit = commit;
        st.toplevel = trimmed(top.stdout_text);
        st.dirty = !status.succeeded() || !trimmed(status.stdout_text).empty();
    } catch (...) {
        return git_state{};
    }
    return st;
}

}  // namespace kloop::platform
