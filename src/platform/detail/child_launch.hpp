// kloop platform (detail): starting one child process — fork, set it up, exec — for the command
// runner and for background helpers. Not part of the public platform API.
//
// Responsibility: what posix_spawn cannot do, done in the child between fork and exec with
// async-signal-safe system calls only (everything is prepared before the fork):
//   - die_with_parent: PR_SET_PDEATHSIG(SIGKILL), so the child dies with the kloop thread that
//     started it (kloop SIGKILLed, crashed or killed by someone else: a runner, a compiler or a
//     worker never outlives it); then getppid() is checked against the parent that forked it, so
//     a parent that died before the prctl is noticed too (the child exits at once);
//   - its own process group, an empty signal mask and default dispositions for the signals a
//     parent commonly ignores or catches;
//   - optionally a CPU-time limit (RLIMIT_CPU) and a data-memory limit (RLIMIT_DATA), which every
//     process the child starts inherits;
//   - stdin, stdout, stderr (and optionally fd 3) from the given descriptors, /dev/null for
//     stdin when none is given, the working directory, and every other descriptor closed.
// An exec that fails is reported to the parent through a close-on-exec pipe: launch_child
// returns the errno and reaps the child, so a missing program reads as "could not start".
#pragma once

#include <cstddef>

#include <sys/types.h>

namespace kloop::platform::detail {

struct child_setup {
    const char* program = nullptr;     // a path (with '/'); PATH is searched by the caller
    char* const* argv = nullptr;       // NUL-terminated
    char* const* envp = nullptr;       // NUL-terminated
    int stdin_fd = -1;                 // -1: /dev/null
    int stdout_fd = -1;                // -1: /dev/null
    int stderr_fd = -1;                // -1: /dev/null
    int fd3 = -1;                      // >= 0: becomes the child's descriptor 3
    const char* cwd = nullptr;         // nullptr: inherit
    bool die_with_parent = true;       // PR_SET_PDEATHSIG(SIGKILL) towards the calling thread
    long cpu_limit_s = 0;              // > 0: RLIMIT_CPU (soft; hard one second more), inherited
    std::size_t data_limit_bytes = 0;  // > 0: RLIMIT_DATA (soft and hard), inherited
    // A guard between kloop and the program: the child forks the process that execs, waits for
    // it and mirrors its end; when kloop dies (or on SIGTERM) it SIGKILLs its whole process group,
    // so what the program started (a compiler driver's cc1plus) dies too.
    bool guard_group = false;
};

struct launch_result {
    pid_t pid = -1;   // > 0 when the program was executed
    int error = 0;    // errno of the step that failed (fork, a descriptor, chdir, exec) otherwise
};

[[nodiscard]] launch_result launch_child(const child_setup& s);

}  // namespace kloop::platform::detail
