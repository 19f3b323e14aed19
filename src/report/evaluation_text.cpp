// kloop report: evaluation → console text.
#include "report/evaluation_text.hpp"

#include <fmt/format.h>

#include "report/repository_run_report.hpp"
#include "core/text.hpp"

namespace kloop::report {

namespace {

std::string short_commit(const std::string& c) { return c.size() > 12 ? c.substr(0, 12) : c; }

std::string build_line(const char* what, const eval::build_summary& b) {
    if (!b.ok) return fmt::format("{}: FAILED to build", what);
    return fmt::format("{}: ok ({}{:.2f} s)", what, b.cache_hit ? "cache hit, " : "", b.wall_s);
}

}  // namespace

std::string slowest_case_line(const eval::gate_report& g) {
    const eval::case_report* slowest = nullptr;
    double total = 0;
    for (const auto& c : g.cases) {
        total += c.candidate_s;
        if (slowest == nullptr || c.candidate_s > slowest->candidate_s) slowest = &c;
    }
    // Only where the candidate's own time matters: a slow first call (JIT compilation,
    // autotuning) or a runner that ran out of time.
    if (slowest == nullptr || (slowest->candidate_s < 1.0 && g.runner_failure.empty())) return "";
    return fmt::format("  candidate time: {:.1f} s over {} cases; slowest {}/{} trial {}: {:.1f} s (its checked call "
                       "{:.1f} s)\n",
                       total, g.cases.size(), slowest->mode, slowest->shape, slowest->trial, slowest->candidate_s,
                       slowest->call_s);
}

std::string environment_line(const eval::environment_info& env) {
    std::string git = env.git_available ? fmt::format("{}{}", short_commit(env.git_commit), env.git_dirty ? " dirty" : " clean")
                                        : std::string("not a git repository");
    return fmt::format("env: {} ({} cpus, LLC {} MiB) | {} {} | kloop {} ({}{}, {}) | candidate git {}", env.host_cpu,
                       env.logical_cpus, env.llc_bytes >> 20, env.compiler, join(env.flags, " "), env.kloop_version,
                       env.kloop_commit, env.kloop_dirty ? " dirty" : "", env.build_type, git);
}

std::string integrity_and_result_lines(const eval::evaluation& e) {
    std::string out = "integrity:";
    for (const auto& c : e.integrity) out += fmt::format(" {} {} |", eval::to_string(c.status), c.name);
    if (!e.integrity.empty()) out.pop_back();
    out += "\n";
    for (const auto& c : e.integrity)
        if (c.status == eval::check_status::fail || c.status == eval::check_status::warn)
            out += fmt::format("  {} {}: {}\n", eval::to_string(c.status), c.name, c.detail);
    switch (e.status) {
        case eval::disposition::passed: out += e.gate.partial ? "result: PASSED (partial gate)\n" : "result: PASSED\n"; break;
        case eval::disposition::gate_failed: out += "result: REJECTED: " + e.reason + "\n"; break;
        case eval::disposition::build_failed: out += "result: BUILD FAILED\n"; break;
    }
    return out;
}

std::string to_text(const eval::evaluation& e) {
    if (e.repository) return repository_run_text(e);  // an op that lives in a repository (report/repository_run_report)
    std::string out;
    out += fmt::format("kloop verify {} | candidate {}\n", e.op, e.candidate);
    out += environment_line(e.env) + "\n";
    out += build_line("build reference", e.reference_build) + " | " + build_line("candidate", e.candidate_build) + "\n";
    if (e.candidate_build.ptxas.is_object())  // nvcc builds: what ptxas did with each kernel
        for (const auto& k : e.candidate_build.ptxas.value("kernels", nlohmann::json::array()))
            out += fmt::format("  kernel {} [{}]: {} regs, {} B smem, {} B stack, {}/{} B spill st/ld\n",
                               k.value("demangled", k.value("name", "?")), k.value("target", ""), k.value("registers", -1),
                               k.value("smem_bytes", 0), k.value("stack_frame_bytes", 0), k.value("spill_store_bytes", 0),
                               k.value("spill_load_bytes", 0));
    if (!e.candidate_build.ok) {
        out += "compiler diagnostics:\n" + e.candidate_build.diagnostics + "\n";
        out += "result: BUILD FAILED\n";
        return out;
    }

    const auto& g = e.gate;
    int failed = 0;
    for (const auto& c : g.cases) failed += c.pass ? 0 : 1;
    std::string seeds;
    for (auto s : g.seeds) seeds += (seeds.empty() ? "" : ", ") + std::to_string(s);
    out += fmt::format("gate: {}{} | {} cases, {} failed | seeds {} | {:.1f} s{}\n", g.pass ? "PASS" : "FAIL",
                       g.partial ? " (PARTIAL: --gate-k '" + g.gate_k + "', never promotable)" : "", g.cases.size(),
                       failed, seeds, g.wall_s, g.runner_failure.empty() ? "" : " | runner: " + g.runner_failure);
    out += slowest_case_line(g);
    for (const auto& h : g.held_out) {  // drawn from the drawn seed: --seed replays them
        std::string what;
        for (const auto& [name, v] : h.dims) what += fmt::format("{}{}={}", what.empty() ? "" : " ", name, v);
        for (const auto& p : h.params) what += fmt::format(" {}={:.6g}", p.name, p.value);
        out += fmt::format("  held-out {}/{}: {}\n", h.mode, h.shape, what);
    }
    for (const auto& c : g.cases)
        if (!c.pass)
            out += fmt::format("  FAIL {}/{} trial {} (seed {}): {}\n", c.mode, c.shape, c.trial, c.seed, c.reason);

    if (e.bench.ran) {
        std::size_t warnings = e.bench.warnings.size();
        for (const auto& s : e.bench.shapes) warnings += s.warnings.size();
        out += fmt::format("bench: {}{} | {} MiB of cold traffic between two uses of an input set (rotation + flush) | "
                           "{:.1f} s\n",
                           e.bench.ok ? "ok" : "FAILED",
                           warnings ? fmt::format(", {} warning{} (below)", warnings, warnings == 1 ? "" : "s") : "",
                           e.bench.evict_bytes >> 20, e.bench.wall_s);
        for (const auto& w : e.bench.warnings) out += fmt::format("  warning ({}): {}\n", w.code, w.message);
        out += fmt::format("  {:<5} {:<14} {:>5} {:>11} {:>10} {:>9} {:>10} {:>10} {:>10} {:>7} {:>9} {:>8}  {}\n", "mode",
                           "shape", "n", "median_ms", "mean_ms", "std_ms", "min_ms", "p10_ms", "p90_ms", "cv", "GB/s",
                           "checked", "stop");
        for (const auto& s : e.bench.shapes) {
            if (!s.stats_s) {
                out += fmt::format("  {:<5} {:<14} {}\n", s.mode, s.shape, s.error);
                continue;
            }
            const auto& st = *s.stats_s;
            const std::string gbps = s.bytes && st.median > 0 ? fmt::format("{:.1f}", *s.bytes / st.median * 1e-9) : "-";
            out += fmt::format("  {:<5} {:<14} {:>5} {:>11.4f} {:>10.4f} {:>9.4f} {:>10.4f} {:>10.4f} {:>10.4f} {:>6.2f}% {:>9} {:>8}  {}\n",
                               s.mode, s.shape, st.n, st.median * 1e3, st.mean * 1e3, st.stdev * 1e3, st.min * 1e3,
                               st.p10 * 1e3, st.p90 * 1e3, st.cv * 100, gbps,
                               fmt::format("{}/{}", s.checks_total - s.checks_failed, s.checks_total), s.stop_reason);
            for (const auto& w : s.warnings) out += fmt::format("        warning ({}): {}\n", w.code, w.message);
            if (s.graph_replay_s_per_call)
                out += fmt::format("        graph replay: {:.4f} ms per call (CUDA graph, calls back to back)\n",
                                   *s.graph_replay_s_per_call * 1e3);
            if (s.discarded_samples > 0 || s.sm_clock_mhz_median)
                out += fmt::format("        SM clock median {:.0f} MHz; {} samples discarded as throttled\n",
                                   s.sm_clock_mhz_median.value_or(0.0), s.discarded_samples);
            if (!s.ok) out += fmt::format("        FAIL: {}\n", s.error);
        }
    } else if (g.pass && e.status == eval::disposition::gate_failed) {
        out += "bench: not run (an integrity check failed)\n";
    } else if (g.pass) {
        out += "bench: not run (--no-bench)\n";
    } else {
        out += "bench: not run (red gate)\n";
    }

    out += integrity_and_result_lines(e);
    return out;
}

}  // namespace kloop::report
