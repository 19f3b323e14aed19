// Test helper: run the real kloop executable (built beside the tests) and parse its JSON record.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "platform/subprocess.hpp"

namespace kloop::testing {

struct kloop_run {
    int exit_code = -1;
    std::string out;
    std::string err;
    nlohmann::json record;   // parsed stdout when it is JSON, else null
};

inline std::string source_dir() { return KLOOP_TEST_SOURCE_DIR; }
inline std::string example_dir() { return source_dir() + "/examples/rmsnorm"; }

// A finished kloop process as a kloop_run: -1 for a process that did not start, timed out or was
// killed; the record when stdout is JSON.
inline kloop_run to_kloop_run(const platform::process_result& r) {
    kloop_run k;
    k.exit_code = r.started && r.term_signal == 0 && !r.timed_out ? r.exit_code : -1;
    k.out = r.stdout_text;
    k.err = r.stderr_text;
    k.record = nlohmann::json::parse(k.out, nullptr, false);
    if (k.record.is_discarded()) k.record = nullptr;
    return k;
}

// Runs `kloop <args...>` with KLOOP_HOME set to a cache shared by the integration tests, and
// `extra_env` on top.
inline kloop_run run_kloop(const std::vector<std::string>& args, double timeout_s = 300,
                           const std::vector<std::pair<std::string, std::string>>& extra_env = {}) {
    platform::process_request req;
    req.argv = {std::string(KLOOP_TEST_BINARY_DIR) + "/src/kloop"};
    req.argv.insert(req.argv.end(), args.begin(), args.end());
    req.env_overrides = {{"KLOOP_HOME", std::string(KLOOP_TEST_BINARY_DIR) + "/test-home"}};
    for (const auto& e : extra_env) req.env_overrides.push_back(e);
    req.timeout_s = timeout_s;
    req.max_capture_bytes = 64 << 20;
    platform::posix_command_runner runner;
    return to_kloop_run(runner.run(req));
}

// The machine's contention counters at one moment: CPU pressure (the time some runnable task
// waited for a CPU, from /proc/pressure/cpu, when the kernel has it) and /proc/stat's busy and
// total jiffies over all CPUs.
struct cpu_contention_sample {
    std::optional<double> pressure_some_us;
    double busy_jiffies = 0;
    double total_jiffies = 0;
    std::chrono::steady_clock::time_point at = std::chrono::steady_clock::now();

    static cpu_contention_sample now() {
        cpu_contention_sample s;
        std::ifstream psi("/proc/pressure/cpu");
        for (std::string word; psi >> word;) {
            if (word.rfind("total=", 0) == 0) {
                s.pressure_some_us = std::stod(word.substr(6));
                break;  // the first line is "some"
            }
        }
        std::ifstream stat("/proc/stat");
        std::string cpu;
        double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
        if (stat >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal && cpu == "cpu") {
            s.busy_jiffies = user + nice + system + irq + softirq + steal;
            s.total_jiffies = s.busy_jiffies + idle + iowait;
        }
        return s;
    }
};

// Taken when the test process starts: ctest runs each test in a process of its own, so the
// window from here to a test's check is that test's run.
inline const cpu_contention_sample& test_start_contention() {
    static const cpu_contention_sample start = cpu_contention_sample::now();
    return start;
}
namespace detail {
inline const bool test_start_contention_taken = (test_start_contention(), true);
}

// Why timing figures of this machine cannot be held to a bound, or nothing. Busy means, since
// this test process started: some runnable task waited for a CPU more than 10 % of the time
// (CPU pressure), or, on a kernel without pressure figures, the CPUs were more than 85 % busy;
// or the 1-minute load average is above 1.5 runnable tasks per CPU now. A test that asserts a
// timing property (a ratio near 1, a noise floor) checks this after its run and skips those
// assertions, saying so, rather than failing at random on a busy machine.
inline std::optional<std::string> machine_too_busy_for_timing() {
    const auto& start = test_start_contention();
    const auto end = cpu_contention_sample::now();
    const double window_us = std::chrono::duration<double, std::micro>(end.at - start.at).count();
    const unsigned cpus = std::max(1u, std::thread::hardware_concurrency());
    const auto said = [](const std::string& what) {
        return what + ": timing assertions skipped (the verdict semantics above were checked)";
    };
    if (start.pressure_some_us && end.pressure_some_us && window_us > 0) {
        const double stalled = (*end.pressure_some_us - *start.pressure_some_us) / window_us;
        if (stalled > 0.10)
            return said("runnable tasks waited for a CPU " + std::to_string(int(stalled * 100)) +
                        " % of this test's run");
    } else if (end.total_jiffies > start.total_jiffies) {
        const double busy =
            (end.busy_jiffies - start.busy_jiffies) / (end.total_jiffies - start.total_jiffies);
        if (busy > 0.85)
            return said("the CPUs were " + std::to_string(int(busy * 100)) + " % busy during this test");
    }
    std::ifstream in("/proc/loadavg");
    double load = 0;
    if (in >> load && load > 1.5 * cpus)
        return said("load average " + std::to_string(load) + " on " + std::to_string(cpus) + " CPUs");
    return std::nullopt;
}

// Quick bench settings so the suite stays fast; the stopping rule still applies.
inline std::vector<std::string> quick_bench() {
    return {"--min-samples", "10", "--min-time", "0.02", "--max-time", "0.3"};
}

// For a candidate that cheats only after many calls: samples enough to reach its cheat however
// slow the machine is (the time cap would otherwise end the bench first), and no more: a spread
// target no sample count misses ends each shape at `min_samples`, busy machine or not.
inline std::vector<std::string> patient_bench(int min_samples) {
    return {"--min-samples", std::to_string(min_samples), "--min-time", "0.02", "--max-time", "120",
            "--target-rsd", "10"};
}

inline const nlohmann::json* find_check(const nlohmann::json& record, const std::string& name) {
    for (const auto& c : record.at("integrity"))
        if (c.at("name") == name) return &c;
    return nullptr;
}

// The status of integrity check `name` ("pass", "warn", "fail", "skipped"), or "<missing>".
inline std::string check_status(const nlohmann::json& record, const std::string& name) {
    const auto* c = find_check(record, name);
    return c ? c->at("status").get<std::string>() : std::string("<missing>");
}

// Every reason a verify record gives: the run's, the runner's failure, each gate case's.
inline std::string all_reasons(const nlohmann::json& record) {
    std::string all = record.value("reason", "") + "\n";
    if (record.contains("gate")) {
        all += record.at("gate").value("runner_failure", "") + "\n";
        for (const auto& c : record.at("gate").at("cases")) all += c.value("reason", "") + "\n";
    }
    return all;
}

// Processes that only burn CPU, for as long as the object lives: other work on the machine.
class spinners {
public:
    explicit spinners(int n) {
        for (int i = 0; i < n; ++i) {
            const pid_t pid = ::fork();
            if (pid == 0) {
                ::execlp("sh", "sh", "-c", "while :; do :; done", static_cast<char*>(nullptr));
                ::_exit(127);
            }
            if (pid > 0) m_pids.push_back(pid);
        }
    }
    ~spinners() {
        for (pid_t p : m_pids) ::kill(p, SIGKILL);
        for (pid_t p : m_pids) ::waitpid(p, nullptr, 0);
    }
    spinners(const spinners&) = delete;
    spinners& operator=(const spinners&) = delete;

private:
    std::vector<pid_t> m_pids;
};

}  // namespace kloop::testing
