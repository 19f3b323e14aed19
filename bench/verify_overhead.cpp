// kloop bench: kloop's own overhead on `kloop verify` — wall time minus the time spent inside
// candidate calls, per (mode, shape) — and the cost of a cached rebuild.
//
//   kloop-bench-verify-overhead [--op DIR] [--candidate FILE] [--runs N]
//
// Runs `kloop verify --json --keep DIR` N times with a warm build cache (after one cold run that
// fills it, in a private KLOOP_HOME), reads the runner's events for the time spent inside the
// candidate (gate calls, warm-up, timed samples), and prints per run: wall, candidate time,
// overhead, overhead per (mode, shape), the CPU time of kloop and its runners (user + sys, all
// threads, candidate calls included) and the build wall of both cached builds. Wall is the
// goal's measure, but on a loaded machine it grows with the load (the candidate's wall time too),
// so the load average is printed, and the CPU time says how much work there was. Not a test:
// figures go to docs/perf.md with the machine, the date and the load.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/statistics.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"
#include "platform/subprocess.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct run_figures {
    double wall_s = 0;
    double candidate_s = 0;
    int items = 0;  // distinct (mode, shape) pairs gated or timed
    double cached_build_s = 0;
    double cpu_s = 0;  // user + sys of kloop and every process it waited for
    bool both_cache_hits = false;
};

double children_cpu_seconds() {
    rusage u{};
    ::getrusage(RUSAGE_CHILDREN, &u);
    auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
    return sec(u.ru_utime) + sec(u.ru_stime);
}

std::string load_average() {
    std::ifstream in("/proc/loadavg");
    std::string one;
    in >> one;
    return one.empty() ? "?" : one;
}

double candidate_seconds(const fs::path& keep) {
    double total = 0;
    for (const char* name : {"gate_events.jsonl", "bench_events.jsonl"}) {
        std::ifstream in(keep / name);
        std::string line;
        while (std::getline(in, line)) {
            const auto e = json::parse(line, nullptr, false);
            if (e.is_discarded()) continue;
            if (e.value("event", "") == "case_result") total += e.value("candidate_s", e.value("call_s", 0.0));
            if (e.value("event", "") == "bench_result") {
                total += e.value("warmup_s", 0.0);
                for (double s : e.value("samples_s", std::vector<double>{})) total += s;
            }
        }
    }
    return total;
}

run_figures run_once(const std::string& kloop, const std::string& op, const std::string& cand, const fs::path& home,
                     const fs::path& keep) {
    fs::remove_all(keep);
    kloop::platform::process_request req;
    req.argv = {kloop, "verify", op, "--candidate", cand, "--json", "--keep", keep.string()};
    req.env_overrides = {{"KLOOP_HOME", home.string()}};
    req.max_capture_bytes = 256u << 20;
    kloop::platform::posix_command_runner runner;
    const double cpu0 = children_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = runner.run(req);
    run_figures f;
    f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    f.cpu_s = children_cpu_seconds() - cpu0;
    const auto rec = json::parse(r.stdout_text, nullptr, false);
    if (rec.is_discarded() || r.exit_code != 0) {
        std::fprintf(stderr, "kloop verify failed (%s): %s\n", r.describe().c_str(), r.stderr_text.c_str());
        std::exit(1);
    }
    f.candidate_s = candidate_seconds(keep);
    std::vector<std::string> seen;
    for (const auto& c : rec.at("gate").at("cases")) seen.push_back(c.at("mode").get<std::string>() + "/" + c.at("shape").get<std::string>());
    for (const auto& s : rec.at("bench").at("shapes")) seen.push_back(s.at("mode").get<std::string>() + "/" + s.at("shape").get<std::string>());
    std::sort(seen.begin(), seen.end());
    f.items = static_cast<int>(std::unique(seen.begin(), seen.end()) - seen.begin());
    const auto& b = rec.at("build");
    f.cached_build_s = b.at("candidate").at("wall_s").get<double>() + b.at("reference").at("wall_s").get<double>();
    f.both_cache_hits = b.at("candidate").at("cache_hit").get<bool>() && b.at("reference").at("cache_hit").get<bool>();
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    std::string op = (kloop::platform::data_dir() / "examples" / "rmsnorm").string();  // the build tree's link
    std::string cand = op + "/versions/v1_rowwise.cpp";
    int runs = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--op") op = argv[i + 1];
        else if (a == "--candidate") cand = argv[i + 1];
        else if (a == "--runs") runs = std::stoi(argv[i + 1]);
    }
    const std::string kloop = (fs::path(argv[0]).parent_path().parent_path() / "src" / "kloop").string();
    kloop::platform::scoped_temp_dir home("kloop-bench-home");
    const fs::path keep = home.path() / "keep";

    std::printf("load average (1 min) at start: %s\n", load_average().c_str());
    const auto cold = run_once(kloop, op, cand, home.path(), keep);
    std::printf("cold run (fills the build cache): wall %.2f s, builds %.2f s\n", cold.wall_s, cold.cached_build_s);
    std::printf("%-4s %9s %12s %11s %7s %15s %9s %14s %6s\n", "run", "wall_s", "candidate_s", "overhead_s", "items",
                "overhead/item", "cpu_s", "cached_build_s", "hits");
    std::vector<double> per_item;
    std::vector<double> cpu;
    for (int r = 0; r < runs; ++r) {
        const auto f = run_once(kloop, op, cand, home.path(), keep);
        const double overhead = f.wall_s - f.candidate_s;
        per_item.push_back(overhead / f.items);
        cpu.push_back(f.cpu_s);
        std::printf("%-4d %9.2f %12.2f %11.2f %7d %15.3f %9.2f %14.4f %6s\n", r, f.wall_s, f.candidate_s, overhead,
                    f.items, overhead / f.items, f.cpu_s, f.cached_build_s, f.both_cache_hits ? "yes" : "NO");
    }
    const auto st = kloop::measure::summarize(per_item);
    std::printf("overhead per (mode, shape): median %.3f s, min %.3f s, max %.3f s over %d runs\n", st.median, st.min,
                st.max, runs);
    std::printf("CPU time of a whole verify (user + sys, all threads, candidate included): median %.2f s\n",
                kloop::measure::summarize(cpu).median);
    std::printf("load average (1 min) at end: %s\n", load_average().c_str());
    return 0;
}
