// kloop platform: posix_command_runner — posix_spawn, process groups, capture, timeouts.
//
// Shape of do_run (after ninja's src/subprocess-posix.cc, plus what ninja lacks: a timeout that
// kills the whole process group, and a capped capture):
//   1. prepare stdout/stderr (pipes, read ends non-blocking, or files), /dev/null for stdin;
//   2. posix_spawn(p) with POSIX_SPAWN_SETPGROUP (pgid = child pid), an empty signal mask and
//      default dispositions for the signals a parent commonly ignores or catches;
//   3. one poll loop over the pipes (and a pidfd when the kernel has one) in slices short
//      enough to notice the deadline and the interrupt flag;
//   4. on deadline or interrupt: SIGTERM to the group, SIGKILL after kill_grace_s;
//   5. once the leader is reaped, drain the pipes; stragglers of the group still holding them
//      open after a short grace are killed, so a backgrounded grandchild cannot hang kloop.
#include "platform/subprocess.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "platform/detail/posix_spawn.hpp"
#include "platform/detail/unique_fd.hpp"

namespace kloop::platform {

using detail::child_environment;
using detail::errno_message;
using detail::spawn_actions;
using detail::spawn_attr;
using detail::unique_fd;

// ---------------------------------------------------------------------------------------------
// Interrupt flag

namespace {

std::atomic<bool> g_interrupt{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");

extern "C" void kloop_interrupt_handler(int sig) {
    if (g_interrupt.exchange(true)) {
        // Second signal while the first is still being handled: stop waiting politely.
        ::signal(sig, SIG_DFL);
        ::raise(sig);
    }
}

}  // namespace

void install_interrupt_handler() {
    struct sigaction sa {};
    sa.sa_handler = kloop_interrupt_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: let a blocking poll return EINTR promptly
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
}

bool interrupt_requested() { return g_interrupt.load(); }

void clear_interrupt_request() { g_interrupt.store(false); }

// ---------------------------------------------------------------------------------------------
// Names and descriptions

std::string signal_name(int sig) {
    switch (sig) {
        case SIGHUP: return "SIGHUP";
        case SIGINT: return "SIGINT";
        case SIGQUIT: return "SIGQUIT";
        case SIGILL: return "SIGILL";
        case SIGTRAP: return "SIGTRAP";
        case SIGABRT: return "SIGABRT";
        case SIGBUS: return "SIGBUS";
        case SIGFPE: return "SIGFPE";
        case SIGKILL: return "SIGKILL";
        case SIGUSR1: return "SIGUSR1";
        case SIGSEGV: return "SIGSEGV";
        case SIGUSR2: return "SIGUSR2";
        case SIGPIPE: return "SIGPIPE";
        case SIGALRM: return "SIGALRM";
        case SIGTERM: return "SIGTERM";
        case SIGCHLD: return "SIGCHLD";
        case SIGCONT: return "SIGCONT";
        case SIGSTOP: return "SIGSTOP";
        case SIGTSTP: return "SIGTSTP";
        case SIGTTIN: return "SIGTTIN";
        case SIGTTOU: return "SIGTTOU";
        case SIGURG: return "SIGURG";
        case SIGXCPU: return "SIGXCPU";
        case SIGXFSZ: return "SIGXFSZ";
        case SIGVTALRM: return "SIGVTALRM";
        case SIGPROF: return "SIGPROF";
        case SIGWINCH: return "SIGWINCH";
        case SIGIO: return "SIGIO";
        case SIGSYS: return "SIGSYS";
#ifdef SIGSTKFLT
        case SIGSTKFLT: return "SIGSTKFLT";
#endif
#ifdef SIGPWR
        case SIGPWR: return "SIGPWR";
#endif
        default: return fmt::format("signal {}", sig);
    }
}

bool process_result::succeeded() const {
    return started && !timed_out && !interrupted && term_signal == 0 && exit_code == 0;
}

std::string process_result::describe() const {
    if (!started) return spawn_error.empty() ? std::string("could not start") : spawn_error;
    if (interrupted) return "interrupted";
    if (timed_out) return fmt::format("timed out after {:.1f} s", timeout_s);
    if (term_signal != 0) return fmt::format("killed by {} (signal {})", signal_name(term_signal), term_signal);
    return fmt::format("exited with {}", exit_code);
}

// ---------------------------------------------------------------------------------------------
// Spawning

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// Looks argv0 up on `path_value` (a PATH string). Empty when not found.
std::string search_path(const std::string& argv0, std::string_view path_value) {
    std::size_t start = 0;
    while (start <= path_value.size()) {
        std::size_t end = path_value.find(':', start);
        if (end == std::string_view::npos) end = path_value.size();
        std::string_view dir = path_value.substr(start, end - start);
        std::string candidate(dir.empty() ? std::string_view(".") : dir);
        candidate.push_back('/');
        candidate.append(argv0);
        struct stat st {};
        if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
            ::access(candidate.c_str(), X_OK) == 0)
            return candidate;
        start = end + 1;
    }
    return {};
}

// One output stream of the child: a pipe we read, or a file it writes.
struct output_channel {
    unique_fd read_end;   // ours (non-blocking), when captured
    unique_fd child_end;  // dup2'ed onto 1 or 2 in the child, closed in the parent after spawn
    std::string* text = nullptr;
    bool* truncated = nullptr;
};

// Opens the file or the pipe for one stream; returns an error sentence or "".
std::string prepare_channel(const std::filesystem::path& file, output_channel& ch) {
    if (!file.empty()) {
        std::error_code ec;
        if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
        int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) return fmt::format("cannot open output file '{}': {}", file.string(), errno_message(errno));
        ch.child_end.reset(fd);
        return {};
    }
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return fmt::format("cannot create a pipe: {}", errno_message(errno));
    ch.read_end.reset(fds[0]);
    ch.child_end.reset(fds[1]);
    int flags = ::fcntl(fds[0], F_GETFL);
    ::fcntl(fds[0], F_SETFL, flags | O_NONBLOCK);
    return {};
}

// Reads what is available; closes the read end at EOF or on error.
void drain_channel(output_channel& ch, std::size_t cap) {
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(ch.read_end.get(), buf, sizeof buf);
        if (n > 0) {
            std::size_t room = ch.text->size() < cap ? cap - ch.text->size() : 0;
            std::size_t take = std::min<std::size_t>(room, static_cast<std::size_t>(n));
            ch.text->append(buf, take);
            if (take < static_cast<std::size_t>(n)) *ch.truncated = true;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        ch.read_end.reset();  // EOF or a read error
        return;
    }
}

unique_fd open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
    long fd = ::syscall(SYS_pidfd_open, pid, 0);  // always close-on-exec
    if (fd >= 0) return unique_fd(static_cast<int>(fd));
#else
    (void)pid;
#endif
    return unique_fd();
}

}  // namespace

process_result posix_command_runner::do_run(const process_request& r) {
    process_result res;
    res.timeout_s = r.timeout_s;
    if (r.argv.empty() || r.argv[0].empty())
        throw internal_error("posix_command_runner: process_request with an empty argv");
    const std::string& argv0 = r.argv[0];
    auto fail_to_start = [&](const std::string& why) {
        res.spawn_error = fmt::format("could not start '{}': {}", argv0, why);
        return res;
    };

    if (interrupt_requested()) {
        res.interrupted = true;
        return fail_to_start("interrupted");
    }
    if (!r.cwd.empty()) {
        struct stat st {};
        if (::stat(r.cwd.c_str(), &st) != 0)
            return fail_to_start(fmt::format("working directory '{}': {}", r.cwd.string(), errno_message(errno)));
        if (!S_ISDIR(st.st_mode))
            return fail_to_start(fmt::format("working directory '{}': not a directory", r.cwd.string()));
    }

    // Which program: posix_spawnp searches kloop's PATH, so an overridden PATH is searched here.
    std::string program = argv0;
    bool search = argv0.find('/') == std::string::npos;
    for (const auto& [name, value] : r.env_overrides) {
        if (name == "PATH" && search) {
            program = search_path(argv0, value);
            if (program.empty()) return fail_to_start(errno_message(ENOENT));
            search = false;
        }
    }

    output_channel chans[2];
    chans[0].text = &res.stdout_text;
    chans[0].truncated = &res.stdout_truncated;
    chans[1].text = &res.stderr_text;
    chans[1].truncated = &res.stderr_truncated;
    if (auto e = prepare_channel(r.stdout_file, chans[0]); !e.empty()) return fail_to_start(e);
    if (auto e = prepare_channel(r.stderr_file, chans[1]); !e.empty()) return fail_to_start(e);

    spawn_actions actions;
    posix_spawn_file_actions_addopen(&actions.a, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions.a, chans[0].child_end.get(), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions.a, chans[1].child_end.get(), STDERR_FILENO);
    if (!r.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions.a, r.cwd.c_str());
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 34)
    // Also close descriptors someone else leaked into kloop without close-on-exec (a parent
    // shell, a CI harness): the child starts with exactly 0, 1 and 2. Costs nothing in glibc
    // terms: anything linked against glibc >= 2.34 already requires that version.
    posix_spawn_file_actions_addclosefrom_np(&actions.a, STDERR_FILENO + 1);
#endif

    spawn_attr attr;

    std::vector<std::string> argv_strings = r.argv;
    std::vector<char*> argv = detail::c_string_array(argv_strings);
    std::vector<std::string> env_strings = child_environment(r.env_overrides);
    std::vector<char*> envp = detail::c_string_array(env_strings);

    const auto t0 = clock_type::now();
    pid_t pid = -1;
    int rc = search ? ::posix_spawnp(&pid, program.c_str(), &actions.a, &attr.a, argv.data(), envp.data())
                    : ::posix_spawn(&pid, program.c_str(), &actions.a, &attr.a, argv.data(), envp.data());
    chans[0].child_end.reset();
    chans[1].child_end.reset();
    if (rc != 0) return fail_to_start(errno_message(rc));
    res.started = true;

    unique_fd pidfd = open_pidfd(pid);
    bool reaped = false;
    bool status_known = false;
    int status = 0;
    auto reaped_at = t0;
    bool term_sent = false, kill_sent = false, stragglers_killed = false;
    auto term_sent_at = t0;
    const auto deadline = t0 + std::chrono::duration_cast<clock_type::duration>(
                                   std::chrono::duration<double>(r.timeout_s > 0 ? r.timeout_s : 0));
    // Stragglers: members of the group that outlive the leader and keep our pipes open.
    constexpr double straggler_grace_s = 0.2;
    constexpr double give_up_after_kill_s = 1.0;
    int idle_ms = 1;  // poll slice when nothing is left to wait on but the child (no pidfd)

    auto send_term = [&] {
        ::killpg(pid, SIGTERM);
        term_sent = true;
        term_sent_at = clock_type::now();
    };

    for (;;) {
        auto now = clock_type::now();
        if (!reaped) {
            pid_t w;
            do {
                w = ::waitpid(pid, &status, WNOHANG);
            } while (w < 0 && errno == EINTR);
            if (w == pid || (w < 0 && errno == ECHILD)) {
                // ECHILD: someone else reaped it (SIGCHLD set to SIG_IGN): the status is lost,
                // and an unknown status must not read as success.
                status_known = w == pid;
                reaped = true;
                reaped_at = now;
                pidfd.reset();
                if (term_sent) {
                    // We were killing the group; finish the job for any member still alive.
                    ::killpg(pid, SIGKILL);
                    stragglers_killed = true;
                }
            }
        }
        bool pipes_open = chans[0].read_end.is_open() || chans[1].read_end.is_open();
        if (reaped && !pipes_open) break;

        if (!reaped) {
            if (!term_sent && interrupt_requested()) {
                res.interrupted = true;
                send_term();
            }
            if (!term_sent && r.timeout_s > 0 && now >= deadline) {
                res.timed_out = true;
                send_term();
            }
            if (term_sent && !kill_sent && seconds_between(term_sent_at, now) >= r.kill_grace_s) {
                ::killpg(pid, SIGKILL);
                kill_sent = true;
            }
        } else {
            double since_reap = seconds_between(reaped_at, now);
            if (!stragglers_killed && since_reap >= straggler_grace_s) {
                ::killpg(pid, SIGKILL);
                stragglers_killed = true;
            } else if (stragglers_killed && since_reap >= straggler_grace_s + give_up_after_kill_s) {
                // Someone left the group (setsid) holding our pipes; stop reading.
                chans[0].read_end.reset();
                chans[1].read_end.reset();
                break;
            }
        }

        // How long to wait: a short slice, so the interrupt flag and the deadlines are noticed.
        int wait_ms = 50;
        if (!reaped && r.timeout_s > 0 && !term_sent) {
            double left_ms = seconds_between(now, deadline) * 1000.0;
            wait_ms = std::min(wait_ms, std::max(1, static_cast<int>(left_ms) + 1));
        }
        pollfd pfds[3];
        output_channel* owners[3] = {nullptr, nullptr, nullptr};
        nfds_t n = 0;
        for (auto& ch : chans) {
            if (ch.read_end.is_open()) {
                pfds[n] = pollfd{ch.read_end.get(), POLLIN, 0};
                owners[n] = &ch;
                ++n;
            }
        }
        if (pidfd.is_open()) {
            pfds[n] = pollfd{pidfd.get(), POLLIN, 0};
            ++n;
        } else if (!reaped && n == 0) {
            // Only the child's exit to wait for and no pidfd: back off from 1 ms to the slice.
            wait_ms = std::min(wait_ms, idle_ms);
            idle_ms = std::min(idle_ms * 2, 50);
        }
        int ready = ::poll(pfds, n, wait_ms);
        if (ready < 0 && errno != EINTR) {
            // Should not happen; avoid spinning.
            ::usleep(1000);
            continue;
        }
        if (ready <= 0) continue;
        for (nfds_t i = 0; i < n; ++i) {
            if (owners[i] != nullptr && (pfds[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) != 0)
                drain_channel(*owners[i], r.max_capture_bytes);
        }
    }

    res.wall_s = seconds_between(t0, reaped_at);
    if (!status_known) {
        res.exit_code = -1;
    } else if (WIFEXITED(status)) {
        res.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        res.term_signal = WTERMSIG(status);
    }
    return res;
}

}  // namespace kloop::platform
