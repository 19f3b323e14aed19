// kloop platform: posix_command_runner — fork/exec, process groups, capture, timeouts.
//
// Shape of do_run (after ninja's src/subprocess-posix.cc, plus what ninja lacks: a timeout that
// kills the whole process group, a capped capture, and children that die with kloop):
//   1. prepare stdout/stderr as pipes (read ends non-blocking); a stream bound for a file is
//      relayed by kloop into that file, up to its cap; /dev/null for stdin;
//   2. launch the child (detail/child_launch.hpp): PR_SET_PDEATHSIG, its own process group, an
//      empty signal mask and default dispositions for the signals a parent commonly ignores or
//      catches;
//   3. one poll loop over the pipes (and a pidfd when the kernel has one) in slices short
//      enough to notice the deadline and the interrupt flag;
//   4. on deadline or interrupt: SIGTERM to the group, SIGKILL after kill_grace_s;
//   5. once the leader is reaped, drain the pipes; stragglers of the group still holding them
//      open after a short grace are killed, so a backgrounded grandchild cannot hang kloop.
#include "platform/subprocess.hpp"

#include <algorithm>
#include <cmath>
#include <atomic>
#include <cstdlib>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "platform/detail/child_launch.hpp"
#include "platform/detail/posix_spawn.hpp"
#include "platform/detail/unique_fd.hpp"

namespace kloop::platform {

using detail::child_environment;
using detail::errno_message;
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

// One output stream of the child: a pipe we read, captured into `text` or relayed into a file.
struct output_channel {
    unique_fd read_end;   // ours (non-blocking)
    unique_fd child_end;  // the child's stdout or stderr; closed in the parent after the launch
    std::string* text = nullptr;
    bool* truncated = nullptr;
    // Relayed into a file: at most file_cap bytes written; the last file_tail_bytes kept in *tail.
    unique_fd file;
    std::filesystem::path file_path;
    std::size_t file_cap = 0;
    std::size_t file_written = 0;
    std::size_t dropped = 0;
    std::string* tail = nullptr;
};

// Opens the pipe (and the file it is relayed into) for one stream; returns an error sentence or "".
std::string prepare_channel(const std::filesystem::path& file, std::size_t file_cap, output_channel& ch) {
    if (!file.empty()) {
        std::error_code ec;
        if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
        int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) return fmt::format("cannot open output file '{}': {}", file.string(), errno_message(errno));
        ch.file.reset(fd);
        ch.file_path = file;
        ch.file_cap = file_cap;
    }
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return fmt::format("cannot create a pipe: {}", errno_message(errno));
    ch.read_end.reset(fds[0]);
    ch.child_end.reset(fds[1]);
    int flags = ::fcntl(fds[0], F_GETFL);
    ::fcntl(fds[0], F_SETFL, flags | O_NONBLOCK);
    return {};
}

void write_all(int fd, const char* p, std::size_t n) {
    while (n > 0) {
        const ssize_t w = ::write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;  // a full disk: what could not be written is lost, the child is not
        p += w;
        n -= static_cast<std::size_t>(w);
    }
}

void relay(output_channel& ch, const char* buf, std::size_t n) {
    const std::size_t room = ch.file_written < ch.file_cap ? ch.file_cap - ch.file_written : 0;
    const std::size_t take = std::min(room, n);
    write_all(ch.file.get(), buf, take);
    ch.file_written += take;
    ch.dropped += n - take;
    if (take < n) *ch.truncated = true;
    ch.tail->append(buf, n);
    if (ch.tail->size() > 2 * file_tail_bytes) ch.tail->erase(0, ch.tail->size() - file_tail_bytes);
}

// Reads what is available; closes the read end at EOF or on error.
void drain_channel(output_channel& ch, std::size_t cap) {
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(ch.read_end.get(), buf, sizeof buf);
        if (n > 0) {
            if (ch.file.is_open()) {
                relay(ch, buf, static_cast<std::size_t>(n));
                continue;
            }
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

// A relayed stream's file gets a last line saying what was dropped; the tail keeps its last bytes.
void finish_channel(output_channel& ch) {
    if (!ch.file.is_open()) return;
    if (ch.dropped > 0) {
        const auto note = fmt::format("\n[kloop: {} more bytes were dropped: this log keeps the first {}]\n", ch.dropped,
                                      ch.file_cap);
        write_all(ch.file.get(), note.data(), note.size());
    }
    if (ch.tail->size() > file_tail_bytes) ch.tail->erase(0, ch.tail->size() - file_tail_bytes);
    ch.file.reset();
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

    // Which program: an overriding PATH is searched here, else kloop's own (below).
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
    chans[0].tail = &res.stdout_tail;
    chans[1].tail = &res.stderr_tail;
    if (auto e = prepare_channel(r.stdout_file, r.max_file_bytes, chans[0]); !e.empty()) return fail_to_start(e);
    if (auto e = prepare_channel(r.stderr_file, r.max_file_bytes, chans[1]); !e.empty()) return fail_to_start(e);

    if (search) {
        // As execvp would: kloop's own PATH.
        const char* path = std::getenv("PATH");
        program = search_path(argv0, path != nullptr ? std::string_view(path) : std::string_view("/usr/bin:/bin"));
        if (program.empty()) return fail_to_start(errno_message(ENOENT));
    }

    std::vector<std::string> argv_strings = r.argv;
    std::vector<char*> argv = detail::c_string_array(argv_strings);
    std::vector<std::string> env_strings = child_environment(r.env_overrides);
    std::vector<char*> envp = detail::c_string_array(env_strings);
    const std::string cwd = r.cwd.string();

    detail::child_setup setup;
    setup.program = program.c_str();
    setup.argv = argv.data();
    setup.envp = envp.data();
    setup.stdout_fd = chans[0].child_end.get();
    setup.stderr_fd = chans[1].child_end.get();
    setup.cwd = r.cwd.empty() ? nullptr : cwd.c_str();
    setup.die_with_parent = true;
    setup.data_limit_bytes = r.memory_limit_bytes;
    setup.guard_group = r.guard_group;
    if (r.cpu_limit_s > 0) setup.cpu_limit_s = static_cast<long>(std::ceil(std::min(r.cpu_limit_s, max_timeout_s)));

    const auto t0 = clock_type::now();
    const auto launched = detail::launch_child(setup);
    chans[0].child_end.reset();
    chans[1].child_end.reset();
    if (launched.pid <= 0) return fail_to_start(errno_message(launched.error));
    const pid_t pid = launched.pid;
    res.started = true;

    unique_fd pidfd = open_pidfd(pid);
    bool reaped = false;
    bool status_known = false;
    int status = 0;
    auto reaped_at = t0;
    bool term_sent = false, kill_sent = false, stragglers_killed = false;
    auto term_sent_at = t0;
    // Held to max_timeout_s: a longer one would overflow the clock and expire at once.
    const double timeout_s = std::min(r.timeout_s > 0 ? r.timeout_s : 0.0, max_timeout_s);
    const auto deadline = t0 + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(timeout_s));
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

    finish_channel(chans[0]);
    finish_channel(chans[1]);
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
