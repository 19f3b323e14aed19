// kloop platform: other work on the machine during a timing (see host_load.hpp).
#include "platform/host_load.hpp"

#include <algorithm>

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

namespace kloop::platform {

std::string host_load_report::describe() const {
    if (samples == 0) return "no load samples (/proc unreadable)";
    return fmt::format("other runnable threads in {} of {} samples (at most {}, mean {:.1f})", busy_samples, samples,
                       max_other, mean_other);
}

int parse_procs_running(std::string_view s) {
    constexpr std::string_view key = "procs_running ";
    std::size_t p = 0;
    while (p < s.size()) {
        const auto nl = s.find('\n', p);
        const auto line = s.substr(p, nl == std::string_view::npos ? std::string_view::npos : nl - p);
        if (line.substr(0, key.size()) == key) {
            const std::string n(line.substr(key.size()));
            char* end = nullptr;
            const long v = std::strtol(n.c_str(), &end, 10);
            return end != n.c_str() && v >= 0 ? static_cast<int>(v) : -1;
        }
        if (nl == std::string_view::npos) break;
        p = nl + 1;
    }
    return -1;
}

bool parse_stat_line(std::string_view line, char& state, int& ppid) {
    // "pid (comm) S ppid …": comm may hold spaces and parentheses, so read after the last ')'.
    const auto close = line.rfind(')');
    if (close == std::string_view::npos || close + 4 > line.size()) return false;
    state = line[close + 2];
    const std::string rest(line.substr(close + 4));
    char* end = nullptr;
    const long p = std::strtol(rest.c_str(), &end, 10);
    if (end == rest.c_str()) return false;
    ppid = static_cast<int>(p);
    return true;
}

void host_load_tally::add(int machine_running, int own_running) {
    if (machine_running < 0) return;
    const int other = std::max(0, machine_running - own_running);
    auto& r = m_report;
    ++r.samples;
    if (other > 0) ++r.busy_samples;
    r.max_other = std::max(r.max_other, other);
    m_other_sum += other;
    r.mean_other = static_cast<double>(m_other_sum) / r.samples;
}

namespace {

std::string read_small(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::vector<int> numeric_entries(const std::string& dir) {
    std::vector<int> out;
    if (DIR* d = ::opendir(dir.c_str())) {
        while (const dirent* e = ::readdir(d)) {
            char* end = nullptr;
            const long v = std::strtol(e->d_name, &end, 10);
            if (end != e->d_name && *end == '\0') out.push_back(static_cast<int>(v));
        }
        ::closedir(d);
    }
    return out;
}

// Runnable threads of this process and every process below it.
int own_running() {
    std::multimap<int, int> children;  // ppid → pid
    for (int pid : numeric_entries("/proc")) {
        char state = 0;
        int ppid = 0;
        if (parse_stat_line(read_small("/proc/" + std::to_string(pid) + "/stat"), state, ppid)) children.emplace(ppid, pid);
    }
    int running = 0;
    std::vector<int> todo = {static_cast<int>(::getpid())};
    while (!todo.empty()) {
        const int pid = todo.back();
        todo.pop_back();
        const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
        for (int tid : numeric_entries(task_dir)) {
            char state = 0;
            int ppid = 0;
            if (parse_stat_line(read_small(task_dir + "/" + std::to_string(tid) + "/stat"), state, ppid) && state == 'R')
                ++running;
        }
        const auto [a, b] = children.equal_range(pid);
        for (auto it = a; it != b; ++it) todo.push_back(it->second);
    }
    return running;
}

}  // namespace

host_load_sampler::host_load_sampler(double interval_s) : m_thread([this, interval_s] { run(interval_s); }) {}

host_load_sampler::~host_load_sampler() { (void)stop(); }

void host_load_sampler::run(double interval_s) {
    const auto step = std::chrono::duration<double>(interval_s);
    while (!m_stop.load()) {
        // Ours first, then the machine's: the sampler itself is runnable in both reads.
        const int own = own_running();
        const int machine = parse_procs_running(read_small("/proc/stat"));
        m_tally.add(machine, own);
        std::this_thread::sleep_for(step);
    }
}

host_load_report combined(const host_load_report& a, const host_load_report& b) {
    host_load_report r;
    r.samples = a.samples + b.samples;
    r.busy_samples = a.busy_samples + b.busy_samples;
    r.max_other = std::max(a.max_other, b.max_other);
    r.mean_other = r.samples > 0 ? (a.mean_other * a.samples + b.mean_other * b.samples) / r.samples : 0.0;
    return r;
}

host_load_report host_load_sampler::stop() {
    m_stop.store(true);
    if (m_thread.joinable()) m_thread.join();
    return m_tally.report();
}

}  // namespace kloop::platform
