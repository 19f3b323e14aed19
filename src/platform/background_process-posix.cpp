// kloop platform: background_process — a helper with its own group, stdin held by kloop.
#include "platform/background_process.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "platform/detail/posix_spawn.hpp"
#include "platform/detail/unique_fd.hpp"

namespace kloop::platform {

using detail::errno_message;
using detail::unique_fd;

background_process::background_process(const background_request& r) {
    if (r.argv.empty() || r.argv[0].empty()) throw internal_error("background_process: an empty argv");
    const auto fail = [&](const std::string& why) { m_spawn_error = fmt::format("could not start '{}': {}", r.argv[0], why); };
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        fail("cannot create a pipe: " + errno_message(errno));
        return;
    }
    unique_fd child_stdin(fds[0]), our_end(fds[1]);
    unique_fd log;
    if (!r.log_file.empty()) {
        std::error_code ec;
        if (r.log_file.has_parent_path()) std::filesystem::create_directories(r.log_file.parent_path(), ec);
        log.reset(::open(r.log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    } else {
        log.reset(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    }
    if (!log.is_open()) {
        fail(fmt::format("cannot open '{}': {}", r.log_file.string(), errno_message(errno)));
        return;
    }

    detail::spawn_actions actions;
    posix_spawn_file_actions_adddup2(&actions.a, child_stdin.get(), STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions.a, log.get(), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions.a, log.get(), STDERR_FILENO);
    if (r.fd3 >= 0) posix_spawn_file_actions_adddup2(&actions.a, r.fd3, 3);
    if (!r.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions.a, r.cwd.c_str());
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 34)
    posix_spawn_file_actions_addclosefrom_np(&actions.a, r.fd3 >= 0 ? 4 : 3);
#endif
    detail::spawn_attr attr;
    std::vector<std::string> argv_strings = r.argv;
    auto argv = detail::c_string_array(argv_strings);
    std::vector<std::string> env_strings = detail::child_environment(r.env_overrides);
    auto envp = detail::c_string_array(env_strings);
    pid_t pid = -1;
    const bool search = r.argv[0].find('/') == std::string::npos;
    const int rc = search ? ::posix_spawnp(&pid, argv[0], &actions.a, &attr.a, argv.data(), envp.data())
                          : ::posix_spawn(&pid, argv[0], &actions.a, &attr.a, argv.data(), envp.data());
    if (rc != 0) {
        fail(errno_message(rc));
        return;
    }
    m_pid = pid;
    m_stdin = our_end.release();
}

background_process::~background_process() { stop(); }

bool background_process::running() {
    if (m_pid <= 0 || m_reaped) return false;
    int status = 0;
    pid_t w;
    do {
        w = ::waitpid(m_pid, &status, WNOHANG);
    } while (w < 0 && errno == EINTR);
    if (w == m_pid || (w < 0 && errno == ECHILD)) {
        m_reaped = true;
        return false;
    }
    return true;
}

void background_process::stop(double grace_s) {
    if (m_stdin >= 0) {
        ::close(m_stdin);
        m_stdin = -1;
    }
    if (m_pid <= 0 || m_reaped) return;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
    auto slice = std::chrono::microseconds(200);
    while (running() && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(slice);
        slice = std::min(slice * 2, std::chrono::microseconds(20000));
    }
    ::killpg(m_pid, SIGKILL);  // the helper's stragglers too, when it left any
    if (!m_reaped) {
        int status = 0;
        while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
        }
        m_reaped = true;
    }
}

}  // namespace kloop::platform
