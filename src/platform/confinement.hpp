// kloop platform: confining the process that runs candidate code (Linux, no root needed).
//
// Responsibility: after the candidate host has set itself up (device context, shared buffers)
// and before it loads candidate code, lock it down with what an unprivileged Linux process can
// do to itself:
//   - no_new_privs (required by the other two, and no setuid gain through exec anyway);
//   - a seccomp-bpf filter, on every thread (TSYNC): no process creation (fork, vfork, clone
//     without CLONE_THREAD, clone3 answered ENOSYS so glibc falls back to clone), no execve, no
//     ptrace / process_vm_readv / process_vm_writev / pidfd_getfd, no signals to any process but
//     itself, no mprotect adding PROT_EXEC, no mmap both writable and executable, no new sockets
//     (a Unix socket could reach a server outside the sandbox), no namespaces, mounts, bpf,
//     io_uring or userfaultfd. A violation kills the process with SIGSYS (the verdict says so);
//   - Landlock (when the kernel has it): the file system becomes read-only outside `write_dirs`
//     and unreadable outside `read_dirs`; ABI >= 6 also scopes signals and abstract Unix sockets
//     to the sandbox.
// Each layer that could not be applied is reported, never silently skipped: the caller marks
// results unconfined (docs/security.md).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace kloop::platform {

struct confinement_policy {
    // Readable (and executable) trees; everything else is unreadable under Landlock.
    std::vector<std::filesystem::path> read_dirs;
    // Readable and writable trees (the candidate's private scratch directory).
    std::vector<std::filesystem::path> write_dirs;
    // Device files or trees opened read-write with ioctl (the GPU's /dev/nvidia*).
    std::vector<std::filesystem::path> device_paths;
    // New sockets allowed: under Nsight Compute, whose injected library reports to its front end
    // over one. Off otherwise (a Unix socket could reach a server outside the sandbox).
    bool allow_sockets = false;
};

struct confinement_report {
    bool no_new_privs = false;
    bool seccomp = false;
    int landlock_abi = 0;          // 0: not applied (the kernel lacks it, or it failed)
    std::string detail;            // what was not applied, and why

    // Every layer applied: the run may be called confined.
    [[nodiscard]] bool is_confined() const { return no_new_privs && seccomp && landlock_abi > 0; }
};

// What this kernel offers, without applying anything (for `kloop preflight`).
struct confinement_support {
    bool seccomp = false;
    int landlock_abi = 0;          // 0: none
    std::string detail;
};
[[nodiscard]] confinement_support probe_confinement();

// Applies the three layers to the calling process (seccomp on all threads, Landlock on the
// calling thread and the threads it creates afterwards). Never throws for a missing kernel
// feature: the report says what holds.
[[nodiscard]] confinement_report confine_self(const confinement_policy& policy);

// Makes the calling process not dumpable (PR_SET_DUMPABLE 0): another process of the same user
// — a candidate host where Landlock is missing, or anything it starts — can then neither ptrace
// it nor open its /proc/<pid>/mem, fd/ or environ. kloop's orchestrator calls it first thing; an
// exec resets it, so every program kloop starts decides for itself. Returns whether it held.
bool make_undumpable();

// The default read-only trees a native candidate needs (system libraries, /proc, /sys, /dev,
// the CUDA toolkit), plus the given extra ones that exist.
[[nodiscard]] std::vector<std::filesystem::path> default_read_dirs();

}  // namespace kloop::platform
