// kloop blackbox: what one black-box evaluation records about the commands it ran.
//
// Responsibility: plain data, attached to eval::evaluation (field `blackbox`) so the loop, the
// classification and the reports keep working on one result model. The gate's and the bench's
// verdicts are also mapped onto the evaluation's usual fields (gate.pass, gate.partial,
// bench.shapes with raw samples, integrity checks, status and reason); this record adds what
// only a black box has: the exact argv, working directory, environment, exit status, the parsed
// pytest summary, and the output tails. Printed by blackbox_report (text and JSON).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "blackbox/pytest_summary.hpp"

namespace kloop::blackbox {

// One run of a command in a temporary copy of the repository.
struct command_run {
    std::vector<std::string> argv;          // the command as the spec gives it (plus -k EXPR)
    std::string cwd;                        // relative to the repository root ("." = the root)
    std::vector<std::pair<std::string, std::string>> env;  // the child's whole environment
    std::string env_line;                   // clean_env::describe()
    bool started = false;
    int exit_code = -1;                     // when it exited
    int term_signal = 0;                    // when a signal ended it
    bool timed_out = false;
    double timeout_s = 0;
    double wall_s = 0;
    std::string ended;                      // "exited with 1", "killed by SIGSEGV (signal 11)", "timed out after 5.0 s"
    std::string stdout_tail;                // the last few KiB (the whole output is in the run's log files)
    std::string stderr_tail;
    std::string log_stem;                   // <scratch>/<label>: .stdout / .stderr beside it
};

struct gate_run {
    command_run run;
    pytest_summary summary;
    bool green = false;
    bool partial = false;                   // --gate-k EXPR → pytest -k EXPR
    std::string gate_k;
    std::string reason;                     // why not green
};

struct bench_run {
    command_run run;
    std::string side;                       // "candidate", or "base" / "candidate" in an A/B
    int round = 0;
    bool ok = false;
    std::string error;
};

struct blackbox_record {
    std::string repo_root;                  // the user's repository (never written)
    std::string target;                     // relative to repo_root: where the candidate is placed
    std::string placement = "temporary copy of the repository root; the user's files are never modified";
    std::size_t copied_files = 0;
    std::vector<std::string> frozen;        // the frozen files (absolute)
    std::vector<std::string> refused_env;   // the refusal patterns in force
    std::vector<gate_run> gate;             // one run (empty when nothing ran)
    std::vector<bench_run> bench;           // one per bench run
};

}  // namespace kloop::blackbox
