// kloop eval/record: what an evaluation of an op that lives in a repository records about the
// commands it ran there (a black-box op, docs/blackbox.md).
//
// Responsibility: plain data, attached to eval::evaluation (field `repository_run`) so the loop,
// the classification and the reports keep working on one result model. The gate's and the
// bench's verdicts are also mapped onto the evaluation's usual fields (gate.pass, gate.partial,
// bench.shapes with raw samples, integrity checks, status and reason); this record adds what only
// a repository's own commands have: the exact argv, working directory, environment, exit status,
// the parsed pytest summary, and the output tails. Filled by backend/blackbox; printed by
// report/repository_run_text and report/evaluation_json.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kloop::eval {

// One line of pytest's short test summary info.
struct reported_failure {
    std::string kind;      // "FAILED" | "ERROR"
    std::string node_id;   // "tests/test_op.py::test_softplus[0-n64_d256]"
    std::string message;   // text after " - ", may be empty
};

struct pytest_summary {
    bool found = false;            // a summary line was found
    std::string line;              // that line, colour codes stripped, trimmed
    bool no_tests_ran = false;     // "no tests ran"
    int passed = 0;
    int failed = 0;
    int errors = 0;
    int skipped = 0;
    int xfailed = 0;
    int xpassed = 0;
    int deselected = 0;
    int warnings = 0;
    int rerun = 0;
    std::map<std::string, int> other;      // words added by plugins ("flaky", ...)
    std::optional<double> duration_s;
    std::vector<reported_failure> failures; // at most max_reported_failures, in output order
    int failures_total = 0;                 // every FAILED/ERROR line seen

    // "3 passed, 1 skipped, 2 warnings" — non-zero counts in pytest's order; "no tests ran".
    [[nodiscard]] std::string describe() const;
};

inline constexpr std::size_t max_reported_failures = 50;


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

// A green gate taken over from an earlier run on byte-identical inputs (backend/blackbox/gate_reuse).
struct reused_gate {
    std::string key;                        // SHA-256 over the copy's digest, argv, cwd, environment, interpreter, timeout
    std::string ran_at;                     // when the reused gate ran (UTC, ISO 8601)
    double wall_s = 0;                      // how long it took then (the time saved now)
};

struct repository_gate_run {
    std::optional<reused_gate> reused;      // set: this gate did not run now
    command_run run;
    pytest_summary summary;
    bool green = false;
    bool partial = false;                   // --gate-k EXPR → pytest -k EXPR
    std::string gate_k;
    std::string reason;                     // why not green
};

struct repository_bench_run {
    command_run run;
    std::string side;                       // "candidate", or "base" / "candidate" in an A/B
    int round = 0;
    bool ok = false;
    std::string error;
};

struct repository_run {
    std::string repo_root;                  // the user's repository (never written)
    std::string target;                     // relative to repo_root: where the candidate is placed
    std::string placement = "temporary copy of the repository root; the user's files are never modified";
    std::size_t copied_files = 0;
    std::vector<std::string> frozen;        // the frozen files (absolute)
    std::vector<std::string> refused_env;   // the refusal patterns in force
    std::vector<repository_gate_run> gate;             // one run (empty when nothing ran)
    std::vector<repository_bench_run> bench;           // one per bench run
    // A/B only: how the two sides' bench runs were timed — "one process, interleaved (ABBA per
    // sample)" or "separate processes (ABBA per round)" — and why not in one process where the
    // bench could have (`[bench] sides`): the bench's fallback reason.
    std::string ab_timing;
    std::string ab_timing_fallback;
};

}  // namespace kloop::eval
