// kloop eval: a runner's events as progress, while it runs.
//
// Responsibility: turn what a runner writes (runner/events.hpp) into progress updates
// (eval/record/progress.hpp) — which gate case, bench or A/B shape, or profile runs, its stage,
// and, for a timed item, the stopping rule's state — and follow the events file of a runner
// that is still running, so that the display moves with the work instead of after it.
// The events file is read here only for the display: the session's record is read once, after
// the runner exits (eval/runner_session). Nothing the runner writes reaches the display as text:
// subjects come from the job, stages from a fixed list, the rest are numbers.
#pragma once

#include <atomic>
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "eval/record/progress.hpp"
#include "runner/events.hpp"
#include "runner/job.hpp"

namespace kloop::eval {

// The update one event of `job`'s runner calls for; nullopt for events the display does not show
// (start, done, fatal) and for ids the job does not have.
[[nodiscard]] std::optional<progress_update> progress_of_event(const runner::job& job, const runner::event& e);

// Follows a runner's events file from construction to stop() (or destruction), on its own
// thread, telling `sink` each event's update as its line is complete. Does nothing when `sink`
// is null. Lines that are no event are skipped (the session's reader judges them, not this).
class runner_follower {
public:
    runner_follower(std::filesystem::path events_path, const runner::job& job, progress_sink* sink);
    ~runner_follower();
    runner_follower(const runner_follower&) = delete;
    runner_follower& operator=(const runner_follower&) = delete;

    // Reads what is left, then stops following. Idempotent.
    void stop();

private:
    void follow();
    void read_new_lines();

    std::filesystem::path m_path;
    const runner::job& m_job;
    progress_sink* m_sink;
    std::size_t m_offset = 0;
    std::string m_partial;
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};

}  // namespace kloop::eval
