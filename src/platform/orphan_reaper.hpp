// kloop platform: processes a program leaves running when it ends, adopted and killed.
//
// Responsibility: a proposer of `kloop run` may start processes that outlive it, in its process
// group (`cmd &`, nohup) or out of it (setsid, a double fork). Left alive they would run while
// kloop builds and times the candidates, free to rewrite a staged candidate or a record, or to
// load the machine. While an orphan_reaper lives, this process is the child subreaper
// (prctl(PR_SET_CHILD_SUBREAPER)): every orphan among its descendants is re-parented to it instead
// of init. reap() then kills (SIGKILL) and reaps every child that was not a child when the reaper
// was made — until none is left, since a killed orphan's own children are adopted in turn — and
// returns what it killed. Only escapes from the process tree (a service manager, a scheduler,
// another login) are beyond it. Linux.
#pragma once

#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

namespace kloop::platform {

struct adopted_process {
    pid_t pid = 0;
    std::string command;  // /proc/<pid>/cmdline, spaces for NULs ("" when gone)
};

class orphan_reaper {
public:
    orphan_reaper();   // becomes the subreaper; notes the children there are now
    ~orphan_reaper();  // gives the subreaper role back (what was adopted and not reaped stays a child)
    orphan_reaper(const orphan_reaper&) = delete;
    orphan_reaper& operator=(const orphan_reaper&) = delete;

    // Call when the programs whose orphans it watches have ended (their own processes reaped).
    [[nodiscard]] std::vector<adopted_process> reap();

private:
    std::set<pid_t> m_children_before;
    bool m_was_subreaper = false;
};

// The pids whose parent is this process (/proc/*/stat), zombies included.
[[nodiscard]] std::set<pid_t> child_processes();

}  // namespace kloop::platform
