// kloop platform: a long-lived helper process kloop starts and ends (the Python fork server).
//
// Responsibility: spawn a process that runs beside kloop rather than to completion under
// command_runner_base. The helper leads its own process group, writes stdout and stderr to a
// log file, and reads a pipe on stdin that only kloop holds: when kloop closes it — on stop(),
// in the destructor, or because kloop died — the helper sees end-of-file and is expected to
// exit. stop() then waits a grace period and kills the group, so nothing outlives its owner.
// One descriptor can be handed over as the helper's fd 3 (a listening socket kloop created, so
// that clients can connect before the helper is ready); kloop's own copy stays with the caller.
#pragma once

#include <filesystem>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

namespace kloop::platform {

struct background_request {
    std::vector<std::string> argv;  // argv[0] is looked up on PATH when it has no '/'
    std::filesystem::path cwd;      // empty: kloop's working directory
    std::vector<std::pair<std::string, std::string>> env_overrides;
    std::filesystem::path log_file;  // stdout and stderr (created, truncated); empty: /dev/null
    int fd3 = -1;                    // >= 0: becomes the helper's descriptor 3
};

class background_process {
public:
    // Spawns the helper. Never throws for the helper's sake: when it cannot start, started() is
    // false and spawn_error() says why ("could not start 'x': No such file or directory").
    explicit background_process(const background_request& r);
    ~background_process();
    background_process(const background_process&) = delete;
    background_process& operator=(const background_process&) = delete;

    [[nodiscard]] bool started() const { return m_pid > 0; }
    [[nodiscard]] const std::string& spawn_error() const { return m_spawn_error; }
    [[nodiscard]] pid_t pid() const { return m_pid; }
    // Whether it still runs (reaps it when it has exited).
    [[nodiscard]] bool running();
    // Closes its stdin, waits up to grace_s for it to exit, then SIGKILLs its group; reaps it.
    // Idempotent.
    void stop(double grace_s = 2.0);

private:
    pid_t m_pid = -1;
    int m_stdin = -1;  // our end of the helper's stdin pipe
    bool m_reaped = false;
    std::string m_spawn_error;
};

}  // namespace kloop::platform
