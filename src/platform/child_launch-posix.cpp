// kloop platform: fork, set up, exec — one child that dies with kloop (see detail/child_launch.hpp).
#include "platform/detail/child_launch.hpp"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kloop::platform::detail {

namespace {

// Child side only: report errno to the parent and leave without running any of kloop's code.
[[noreturn]] void fail_in_child(int report_fd, int err) {
    while (::write(report_fd, &err, sizeof err) < 0 && errno == EINTR) {
    }
    ::_exit(127);
}

// Child side only: a copy of `fd` at 10 or above (close-on-exec), so the dup2s onto 0..3 cannot
// overwrite a source that happens to sit there.
int lift(int fd, int report_fd) {
    const int lifted = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
    if (lifted < 0) fail_in_child(report_fd, errno);
    return lifted;
}

int open_null(int flags, int report_fd) {
    const int fd = ::open("/dev/null", flags | O_CLOEXEC);
    if (fd < 0) fail_in_child(report_fd, errno);
    return fd;
}

void place(int fd, int target, int report_fd) {
    while (::dup2(fd, target) < 0) {
        if (errno != EINTR) fail_in_child(report_fd, errno);
    }
}

volatile sig_atomic_t g_guard_stop = 0;  // child side only: the guard was told to end
void on_guard_stop(int) { g_guard_stop = 1; }

// Child side only (after the fork, before the exec): see child_setup::guard_group. Returns in the
// process that goes on to exec; the guard itself never returns.
void become_group_guard(int report_fd, pid_t parent, int max_fd) {
    struct sigaction stop {};
    stop.sa_handler = on_guard_stop;  // no SA_RESTART: the wait below returns EINTR
    sigemptyset(&stop.sa_mask);
    if (::sigaction(SIGTERM, &stop, nullptr) != 0) fail_in_child(report_fd, errno);
    if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) fail_in_child(report_fd, errno);
    if (::getppid() != parent) ::kill(0, SIGKILL);
    const pid_t program = ::fork();
    if (program < 0) fail_in_child(report_fd, errno);
    if (program == 0) {
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        ::sigaction(SIGTERM, &dfl, nullptr);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the guard's death takes it along
        return;
    }
    // The guard holds no descriptor: the report pipe (every copy, or the caller would wait for
    // the guard's end to learn that the exec worked) and the streams are the program's.
#ifdef SYS_close_range
    if (::syscall(SYS_close_range, 0U, ~0U, 0U) != 0)
#endif
        for (int fd = 0; fd < max_fd; ++fd) ::close(fd);
    int status = 0;
    for (;;) {
        if (g_guard_stop) ::kill(0, SIGKILL);  // the whole group, the guard included
        const pid_t r = ::waitpid(program, &status, 0);
        if (r == program) break;
        if (r < 0 && errno != EINTR) ::_exit(127);
    }
    if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
    const int sig = WTERMSIG(status);  // mirrored: the caller sees the program's signal
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
    ::kill(::getpid(), sig);
    ::_exit(128 + sig);
}

}  // namespace

launch_result launch_child(const child_setup& s) {
    launch_result res;
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0) {
        res.error = errno;
        return res;
    }
    // Everything the child needs is computed here: after the fork only system calls run.
    const pid_t parent = ::getpid();
    rlimit files{};
    const int max_fd = ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY && files.rlim_cur < 65536
                           ? static_cast<int>(files.rlim_cur)
                           : 65536;
    static constexpr int reset_signals[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGPIPE, SIGTERM, SIGCHLD, SIGALRM,
                                            SIGUSR1, SIGUSR2, SIGTSTP, SIGTTIN, SIGTTOU, SIGXFSZ};

    const pid_t pid = ::fork();
    if (pid < 0) {
        res.error = errno;
        ::close(report[0]);
        ::close(report[1]);
        return res;
    }
    if (pid == 0) {
        int report_fd = report[1];
        if (s.die_with_parent) {
            if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail_in_child(report_fd, errno);
            // The parent died before the prctl: nobody is left to serve, or to read the report.
            if (::getppid() != parent) ::_exit(127);
        }
        ::setpgid(0, 0);
        if (s.cpu_limit_s > 0) {
            const struct rlimit cpu = {static_cast<rlim_t>(s.cpu_limit_s), static_cast<rlim_t>(s.cpu_limit_s + 1)};
            if (::setrlimit(RLIMIT_CPU, &cpu) != 0) fail_in_child(report_fd, errno);
        }
        if (s.data_limit_bytes > 0) {
            const struct rlimit data = {static_cast<rlim_t>(s.data_limit_bytes), static_cast<rlim_t>(s.data_limit_bytes)};
            if (::setrlimit(RLIMIT_DATA, &data) != 0) fail_in_child(report_fd, errno);
        }
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        for (int sig : reset_signals) ::sigaction(sig, &dfl, nullptr);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);

        report_fd = lift(report_fd, report_fd);
        const int in = lift(s.stdin_fd >= 0 ? s.stdin_fd : open_null(O_RDONLY, report_fd), report_fd);
        const int out = lift(s.stdout_fd >= 0 ? s.stdout_fd : open_null(O_WRONLY, report_fd), report_fd);
        const int err = lift(s.stderr_fd >= 0 ? s.stderr_fd : open_null(O_WRONLY, report_fd), report_fd);
        const int fd3 = s.fd3 >= 0 ? lift(s.fd3, report_fd) : -1;
        place(in, STDIN_FILENO, report_fd);
        place(out, STDOUT_FILENO, report_fd);
        place(err, STDERR_FILENO, report_fd);
        if (fd3 >= 0) place(fd3, 3, report_fd);
        if (s.cwd != nullptr && ::chdir(s.cwd) != 0) fail_in_child(report_fd, errno);
        // Whatever else is open (a descriptor kloop inherited without close-on-exec) ends at the
        // exec; the report pipe stays usable until then.
        const unsigned first = fd3 >= 0 ? 4 : 3;
#ifdef SYS_close_range
        if (::syscall(SYS_close_range, first, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) != 0)
#endif
            for (int fd = static_cast<int>(first); fd < max_fd; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
        if (s.guard_group) become_group_guard(report_fd, parent, max_fd);
        ::execve(s.program, s.argv, s.envp);
        fail_in_child(report_fd, errno);
    }

    ::close(report[1]);
    int child_errno = 0;
    ssize_t n;
    do {
        n = ::read(report[0], &child_errno, sizeof child_errno);
    } while (n < 0 && errno == EINTR);
    ::close(report[0]);
    if (n == static_cast<ssize_t>(sizeof child_errno)) {
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        res.error = child_errno != 0 ? child_errno : ECHILD;
        return res;
    }
    res.pid = pid;
    return res;
}

}  // namespace kloop::platform::detail
