// kloop platform: orphans adopted and killed (see orphan_reaper.hpp).
#include "platform/orphan_reaper.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kloop::platform {

namespace fs = std::filesystem;

namespace {

// The parent pid from /proc/<pid>/stat: the field after the command, which is in parentheses
// and may itself hold spaces and parentheses.
pid_t parent_of(const fs::path& stat_file) {
    std::ifstream in(stat_file);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos) return -1;
    std::istringstream rest(text.substr(close + 1));
    std::string state;
    pid_t ppid = -1;
    rest >> state >> ppid;
    return ppid;
}

std::string command_of(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!s.empty() && s.back() == '\0') s.pop_back();
    for (char& c : s)
        if (c == '\0') c = ' ';
    return s;
}

}  // namespace

std::set<pid_t> child_processes() {
    std::set<pid_t> out;
    const pid_t self = ::getpid();
    std::error_code ec;
    for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        if (parent_of(it->path() / "stat") == self) out.insert(static_cast<pid_t>(std::stol(name)));
    }
    return out;
}

orphan_reaper::orphan_reaper() {
    int was = 0;
    if (::prctl(PR_GET_CHILD_SUBREAPER, &was) == 0) m_was_subreaper = was != 0;
    (void)::prctl(PR_SET_CHILD_SUBREAPER, 1);
    m_children_before = child_processes();
}

orphan_reaper::~orphan_reaper() {
    if (!m_was_subreaper) (void)::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

std::vector<adopted_process> orphan_reaper::reap() {
    std::vector<adopted_process> killed;
    // A killed orphan's children are adopted in their turn; a fork bomb is held to the rounds.
    for (int round = 0; round < 100; ++round) {
        std::vector<pid_t> adopted;
        for (pid_t pid : child_processes())
            if (!m_children_before.count(pid)) adopted.push_back(pid);
        if (adopted.empty()) break;
        for (pid_t pid : adopted) {
            std::string command = command_of(pid);
            int status = 0;
            // An orphan that already ended is a zombie: reaped, not counted.
            if (::waitpid(pid, &status, WNOHANG) == pid) continue;
            ::kill(pid, SIGKILL);
            pid_t w;
            do {
                w = ::waitpid(pid, &status, 0);
            } while (w < 0 && errno == EINTR);
            killed.push_back({pid, std::move(command)});
        }
    }
    return killed;
}

}  // namespace kloop::platform
