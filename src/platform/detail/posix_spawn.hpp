// kloop platform (detail): what every posix_spawn of kloop's sets up — the attribute objects as
// RAII, the child's environment (ours with overrides), and the spawn attributes (own process
// group, empty signal mask, default dispositions). The environment helpers are shared with the
// command runner (which forks itself: detail/child_launch.hpp); the attributes serve background
// processes. Not part of the public platform API.
#pragma once

#include <csignal>
#include <spawn.h>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

extern char** environ;

namespace kloop::platform::detail {

struct spawn_actions {
    posix_spawn_file_actions_t a;
    spawn_actions() { posix_spawn_file_actions_init(&a); }
    ~spawn_actions() { posix_spawn_file_actions_destroy(&a); }
    spawn_actions(const spawn_actions&) = delete;
    spawn_actions& operator=(const spawn_actions&) = delete;
};

// The child leads its own process group (so a kill reaches its descendants), with an empty
// signal mask and default dispositions for the signals a parent commonly ignores or catches.
struct spawn_attr {
    posix_spawnattr_t a;
    spawn_attr() {
        posix_spawnattr_init(&a);
        posix_spawnattr_setflags(&a, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        posix_spawnattr_setpgroup(&a, 0);
        sigset_t empty_mask;
        sigemptyset(&empty_mask);
        posix_spawnattr_setsigmask(&a, &empty_mask);
        sigset_t defaults;
        sigemptyset(&defaults);
        for (int s : {SIGHUP, SIGINT, SIGQUIT, SIGPIPE, SIGTERM, SIGCHLD, SIGALRM, SIGUSR1, SIGUSR2, SIGTSTP, SIGTTIN,
                      SIGTTOU, SIGXFSZ})
            sigaddset(&defaults, s);
        posix_spawnattr_setsigdefault(&a, &defaults);
    }
    ~spawn_attr() { posix_spawnattr_destroy(&a); }
    spawn_attr(const spawn_attr&) = delete;
    spawn_attr& operator=(const spawn_attr&) = delete;
};

// The child's environment: ours with the overrides applied (an override replaces the variable).
inline std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& overrides) {
    std::vector<std::string> env;
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
        std::string_view entry(*e);
        bool overridden = false;
        for (const auto& [name, value] : overrides) {
            if (entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 && entry[name.size()] == '=') {
                overridden = true;
                break;
            }
        }
        if (!overridden) env.emplace_back(entry);
    }
    for (const auto& [name, value] : overrides) env.push_back(name + "=" + value);
    return env;
}

// NUL-terminated pointer arrays over strings that outlive the spawn.
inline std::vector<char*> c_string_array(std::vector<std::string>& strings) {
    std::vector<char*> out;
    out.reserve(strings.size() + 1);
    for (auto& s : strings) out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

}  // namespace kloop::platform::detail
