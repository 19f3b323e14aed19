// kloop platform: running child processes (compilers, the kernel runner, ncu, git).
//
// Responsibility: the one place kloop spawns anything. Callers describe a command with a
// process_request (an argv vector, never a shell string) and get back a process_result that
// decodes how it ended: exit code, signal, timeout or interruption. A child that crashes,
// hangs or misbehaves is data here, never an exception and never the end of kloop.
//
// command_runner_base is the seam tests fake (ninja's CommandRunner / FakeCommandRunner):
// callers hold a command_runner_base&, production passes a posix_command_runner, tests pass a
// fake or a counting decorator. Subclasses override do_run(); callers use run().
//
// posix_command_runner forks and execs (platform/detail/child_launch.hpp): the child dies with
// the kloop thread that started it (PR_SET_PDEATHSIG), leads its own process group, reads
// stdin from /dev/null, writes stdout/stderr into pipes kloop reads — captured up to a cap, or
// relayed into a file up to a cap — the rest drained and dropped, and inherits no other
// descriptor. Neither kloop's memory nor the disk grows with what a child prints.
// On timeout or interruption the whole group gets SIGTERM, then SIGKILL after a grace period,
// so grandchildren (nvcc's cicc, ncu's target) die too.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace kloop::platform {

struct process_request {
    std::vector<std::string> argv;  // argv[0] is looked up on PATH when it has no '/'
    std::filesystem::path cwd;      // empty: inherit kloop's working directory
    // Set (or replace) these variables in the child's environment; the rest is inherited.
    // When PATH is overridden, argv[0] is looked up on the overriding PATH.
    std::vector<std::pair<std::string, std::string>> env_overrides;
    double timeout_s = 0;  // 0 = none; longer than max_timeout_s counts as max_timeout_s
    std::size_t max_capture_bytes = 1 << 20;  // per captured stream; the excess is read and dropped
    // When non-empty, that stream goes to the file (created with parent directories, truncated)
    // instead of being captured: kloop relays it and writes at most max_file_bytes of it (the
    // excess is read and dropped, and a last line says how much was dropped). Its last
    // file_tail_bytes are also kept in process_result::stdout_tail / stderr_tail, so nobody
    // needs to read the file back to show the end of it.
    std::filesystem::path stdout_file;
    std::filesystem::path stderr_file;
    std::size_t max_file_bytes = static_cast<std::size_t>(-1);
    // After a timeout or interruption: seconds between SIGTERM and SIGKILL to the group.
    double kill_grace_s = 2.0;
    // > 0: a CPU-time limit (RLIMIT_CPU, whole seconds, rounded up) for the child and every
    // process it starts. The death signal reaches only the child itself: this is what ends a
    // grandchild (a compiler's cicc or cc1plus) orphaned by a kloop that died.
    double cpu_limit_s = 0;
    // > 0: a limit on the child's data memory (RLIMIT_DATA: heap and private writable mappings),
    // bytes, for the child and every process it starts: an allocation past it fails (ENOMEM,
    // std::bad_alloc, MemoryError) instead of waking the machine's out-of-memory killer.
    std::size_t memory_limit_bytes = 0;
    // A guard process between kloop and the child that SIGKILLs the child's whole process group
    // when kloop dies (detail/child_launch.hpp): for programs that start their own (a compiler
    // driver's cc1plus, which the death signal of the driver does not reach).
    bool guard_group = false;
};

struct process_result {
    bool started = false;
    // Set when !started: "could not start 'x': No such file or directory" (the full sentence).
    std::string spawn_error;
    int exit_code = -1;    // when it exited normally
    int term_signal = 0;   // when a signal ended it (also after our own timeout kill)
    bool timed_out = false;
    bool interrupted = false;  // kloop got SIGINT/SIGTERM while it ran (or before it started)
    double wall_s = 0;         // from spawn to reaping the child
    std::string stdout_text, stderr_text;
    // Additions beyond the brief:
    bool stdout_truncated = false;  // more than max_capture_bytes (or max_file_bytes) arrived; the excess was dropped
    bool stderr_truncated = false;
    // The last file_tail_bytes of a stream relayed into a file (empty for a captured stream).
    std::string stdout_tail, stderr_tail;
    double timeout_s = 0;  // the request's timeout, for describe()

    // started, exited 0, and neither timed out nor interrupted.
    [[nodiscard]] bool succeeded() const;
    // "exited with 3" | "killed by SIGSEGV (signal 11)" | "timed out after 2.0 s" |
    // "interrupted" | "could not start 'x': No such file or directory"
    [[nodiscard]] std::string describe() const;
};

// What a relayed stream keeps in memory: its last 64 KiB.
inline constexpr std::size_t file_tail_bytes = 64 << 10;
// The longest timeout a request can ask for (a year): beyond it the deadline would not fit the
// clock's range, so a longer request is held to this one.
inline constexpr double max_timeout_s = 365.0 * 24 * 3600;

// The seam: production code runs commands through a command_runner_base&.
class command_runner_base {
public:
    virtual ~command_runner_base() = default;
    process_result run(const process_request& r) { return do_run(r); }

protected:
    // Must not throw for anything the child does; may throw kloop::internal_error for a request
    // that is a bug (empty argv).
    virtual process_result do_run(const process_request&) = 0;
};

class posix_command_runner final : public command_runner_base {
protected:
    process_result do_run(const process_request& r) override;
};

// "SIGSEGV", "SIGABRT", ...; "signal N" for one without a name here.
[[nodiscard]] std::string signal_name(int sig);

// Installs SIGINT/SIGTERM handlers that set a flag. A running posix_command_runner polls it,
// kills its child's group and returns interrupted=true; a second signal while the flag is set
// restores the default action and re-raises it (Ctrl-C twice = abort now).
void install_interrupt_handler();
[[nodiscard]] bool interrupt_requested();
// Clears the flag (tests; or a caller that handled the interruption and wants to go on).
void clear_interrupt_request();

}  // namespace kloop::platform
