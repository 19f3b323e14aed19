// kloop platform: was anything else running while kloop timed a candidate?
//
// Responsibility: sample, while a timing runs, how many threads of the whole machine are
// runnable (/proc/stat "procs_running") and how many of them are kloop's own (kloop and every
// process below it: the runner, the candidate host); the difference is other work competing for
// the CPUs. A sampler thread takes a sample every `interval_s` from construction to stop();
// the report says how often, and how much, something else was runnable. Reading /proc is all it
// does; where /proc cannot be read, the report has no samples and says nothing is known.
#pragma once

#include <atomic>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace kloop::platform {

struct host_load_report {
    int samples = 0;
    int busy_samples = 0;        // samples with at least one other runnable thread
    int max_other = 0;           // the most other runnable threads in one sample
    double mean_other = 0;
    // Busy: other work was runnable in at least a quarter of the samples (a daemon's wake-up
    // now and then is not). False without samples.
    [[nodiscard]] bool busy() const { return samples > 0 && busy_samples * 4 >= samples; }
    // "other runnable threads in 12 of 40 samples (at most 3, mean 0.6)"
    [[nodiscard]] std::string describe() const;
};

// Two timings' reports as one (the samples of both): `kloop noise`'s runs, for instance.
[[nodiscard]] host_load_report combined(const host_load_report& a, const host_load_report& b);

// The "procs_running N" line of /proc/stat; -1 when absent.
[[nodiscard]] int parse_procs_running(std::string_view proc_stat);
// The state letter of a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line ('R', 'S', …),
// and its parent pid; false when the line is not one.
[[nodiscard]] bool parse_stat_line(std::string_view line, char& state, int& ppid);

// Folds samples of (runnable threads of the machine, runnable threads of ours).
class host_load_tally {
public:
    void add(int machine_running, int own_running);
    [[nodiscard]] const host_load_report& report() const { return m_report; }

private:
    host_load_report m_report;
    long m_other_sum = 0;
};

// Samples in a thread of its own until stop() (or destruction).
class host_load_sampler {
public:
    explicit host_load_sampler(double interval_s = 0.05);
    ~host_load_sampler();
    host_load_sampler(const host_load_sampler&) = delete;
    host_load_sampler& operator=(const host_load_sampler&) = delete;

    host_load_report stop();

private:
    void run(double interval_s);
    std::atomic<bool> m_stop{false};
    host_load_tally m_tally;
    std::thread m_thread;
};

}  // namespace kloop::platform
