// kloop loop: the journal of an unattended run (`kloop run`) — what each attempt did.
//
// Responsibility: `kloop run` asks a proposer for a candidate, again and again; each ask is an
// attempt. The journal (<workspace>/run/run.json, kind "kloop.run") lists every attempt of every
// run on the workspace with its phase, so a run killed at any point resumes where it stood:
//   proposing   the proposer was running          → on resume: interrupted (asked again)
//   submitted   the candidate went to `iterate`   → on resume: iterated when its iteration is
//               recorded, else submitted again from the attempt's saved copy
//   iterated    an iteration was recorded (its number and status)
//   refused     the proposal broke a rule of the run (no prediction, a blocked direction, no change)
//   failed      the proposer crashed, hung past its limit, or wrote no proposal
//   interrupted the run was stopped (Ctrl-C, a kill) while the proposer ran
//   done        the proposer said it has nothing more to propose
//   tampered    the proposer changed the workspace or a frozen file: the run ended (exit 5)
// Each attempt has its directory <workspace>/run/attempt-NNN/: context/ (what the proposer is
// given), the proposal and logs it wrote, submitted/ (the sources handed to iterate), and in a
// parallel round lane/ (the copy of the kernel's directory its proposer edited). The
// journal is rewritten atomically after every change of phase.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "loop/workspace.hpp"

namespace kloop::loop {

enum class attempt_phase { proposing, submitted, iterated, refused, failed, interrupted, done, tampered };
[[nodiscard]] std::string to_string(attempt_phase p);
[[nodiscard]] attempt_phase attempt_phase_from_string(const std::string& s, const std::string& file_for_messages);

struct run_attempt {
    int number = 0;            // 1, 2, ... over every run on the workspace
    int iteration = 0;         // the number the iteration gets if this attempt is submitted
    // 0: the proposer edited the kernel file in place. k >= 1: the attempt ran in lane k of a
    // `kloop run --parallel` round (loop/proposer_lane), beside its siblings; `round` numbers the
    // round (1, 2, ... over the journal), so a killed run resubmits a round's siblings together.
    int lane = 0;
    int round = 0;
    attempt_phase phase = attempt_phase::proposing;
    std::string reason;        // why refused / failed / ended; the iteration's status line when iterated
    std::string iteration_status;  // "positive" | "negative" | "rejected" when iterated
    std::string proposer;      // how the proposer ended: "exited with 0", "timed out after 600.0 s", ...
    double proposer_wall_s = 0;
    std::string started_at, ended_at;

    // Ends the attempt in phase `p` for `why` at `now`.
    void finish(attempt_phase p, std::string why, std::string now) {
        phase = p;
        reason = std::move(why);
        ended_at = std::move(now);
    }
};

struct run_journal {
    std::vector<run_attempt> attempts;
    std::string ended;         // why the last run ended ("" while one runs or was killed)
    std::string ended_at;

    // Consecutive failed or refused attempts at the end of the journal (the run's failure budget).
    [[nodiscard]] int trailing_failures() const;
    // Starts the next attempt (numbered after the last one), in the proposing phase.
    [[nodiscard]] run_attempt& add(int iteration, const std::string& now);
};

[[nodiscard]] std::filesystem::path run_dir(const workspace& ws);
[[nodiscard]] std::filesystem::path journal_file(const workspace& ws);
[[nodiscard]] std::filesystem::path attempt_dir(const workspace& ws, int attempt);

// An absent journal is empty. Throws kloop::usage_error naming the file when it is malformed.
[[nodiscard]] run_journal read_journal(const workspace& ws);
void write_journal(const workspace& ws, const run_journal& j, const record_origin& origin);

[[nodiscard]] nlohmann::json to_json(const run_attempt& a);

}  // namespace kloop::loop
