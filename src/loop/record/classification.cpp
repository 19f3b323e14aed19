// kloop loop: classification against the current best (see classification.hpp).
#include "loop/record/classification.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kloop::loop {

std::string to_string(iteration_status s) {
    switch (s) {
        case iteration_status::baseline: return "baseline";
        case iteration_status::positive: return "positive";
        case iteration_status::negative: return "negative";
        case iteration_status::rejected: return "rejected";
    }
    return "?";
}

iteration_status iteration_status_from_string(const std::string& s) {
    if (s == "baseline") return iteration_status::baseline;
    if (s == "positive") return iteration_status::positive;
    if (s == "negative") return iteration_status::negative;
    if (s == "rejected") return iteration_status::rejected;
    throw std::invalid_argument("unknown iteration status '" + s + "'");
}

std::string to_string(rejection_kind k) {
    switch (k) {
        case rejection_kind::none: return "none";
        case rejection_kind::build: return "build";
        case rejection_kind::gate: return "gate";
        case rejection_kind::crash: return "crash";
        case rejection_kind::timeout: return "timeout";
        case rejection_kind::integrity: return "integrity";
        case rejection_kind::bench: return "bench";
    }
    return "?";
}

rejection_kind rejection_kind_from_string(const std::string& s) {
    for (auto k : {rejection_kind::none, rejection_kind::build, rejection_kind::gate, rejection_kind::crash,
                   rejection_kind::timeout, rejection_kind::integrity, rejection_kind::bench})
        if (to_string(k) == s) return k;
    throw std::invalid_argument("unknown rejection kind '" + s + "'");
}

namespace {

rejection_kind kind_from_text(const std::string& text, rejection_kind fallback) {
    if (text.find("timed out") != std::string::npos) return rejection_kind::timeout;
    if (text.find("killed by") != std::string::npos || text.find("SIGSEGV") != std::string::npos ||
        text.find("SIGABRT") != std::string::npos || text.find("crash") != std::string::npos)
        return rejection_kind::crash;
    if (text.find("timed call") != std::string::npos || text.find("checked") != std::string::npos)
        return rejection_kind::integrity;
    return fallback;
}

}  // namespace

std::string rejection_reason_of(const eval::evaluation& e) {
    std::string r = e.reason.empty() ? eval::to_string(e.status) : e.reason;
    if (!e.gate.runner_failure.empty()) return r + ": " + e.gate.runner_failure;
    for (const auto& c : e.gate.cases)
        if (!c.pass) return fmt::format("{}: {}/{} trial {}: {}", r, c.mode, c.shape, c.trial, c.reason);
    if (e.status == eval::disposition::build_failed && !e.candidate_build.diagnostics.empty()) {
        const auto& d = e.candidate_build.diagnostics;
        const auto pos = d.find("error");
        const auto start = pos == std::string::npos ? 0 : d.rfind('\n', pos) + 1;
        return r + ": " + d.substr(start, d.find('\n', start) - start);
    }
    return r;
}

rejection_kind rejection_kind_of(const eval::evaluation& e) {
    if (e.status == eval::disposition::build_failed) return rejection_kind::build;
    if (!e.gate.runner_failure.empty()) return kind_from_text(e.gate.runner_failure, rejection_kind::crash);
    const auto k = kind_from_text(e.reason, rejection_kind::gate);
    if (k != rejection_kind::gate) return k;
    // A failed integrity check (red zones, inputs changed, ...) names the cause better than "gate".
    for (const auto& c : e.integrity)
        if (c.status == eval::check_status::fail && c.name != "gate" && c.name != "correctness") return rejection_kind::integrity;
    return rejection_kind::gate;
}

classification classify(const eval::ab_evaluation& ab, const std::string& best_label) {
    classification c;
    if (ab.candidate.status != eval::disposition::passed) {
        c.status = iteration_status::rejected;
        c.kind = rejection_kind_of(ab.candidate);
        c.reason = rejection_reason_of(ab.candidate);
        return c;
    }
    for (const auto& chk : ab.candidate.integrity)
        if (chk.status == eval::check_status::fail) {
            c.status = iteration_status::rejected;
            c.kind = rejection_kind::integrity;
            c.reason = fmt::format("integrity check '{}' failed: {}", chk.name, chk.detail);
            return c;
        }
    if (ab.base.status != eval::disposition::passed)
        throw error(exit_code::gate_red,
                    fmt::format("the current best ({}) failed its own gate in this comparison: {}. Nothing was recorded; "
                                "check the machine and re-run `kloop verify` on it",
                                best_label, ab.base.reason));
    if (!ab.ok) {
        std::string why = ab.reason;
        for (const auto& s : ab.shapes)
            if (!s.ok) {
                if (why.empty()) why = fmt::format("{}/{}: {}", s.mode, s.shape, s.error);
                c.kind = kind_from_text(s.error, rejection_kind::bench);
                break;
            }
        if (c.kind == rejection_kind::none) c.kind = kind_from_text(why, rejection_kind::bench);
        c.status = iteration_status::rejected;
        c.reason = why.empty() ? "the A/B bench did not complete" : why;
        return c;
    }
    if (!ab.overall) {
        c.status = iteration_status::rejected;
        c.kind = rejection_kind::bench;
        c.reason = "the A/B bench produced no overall verdict";
        return c;
    }
    c.overall = ab.overall;
    const auto& o = *ab.overall;
    const std::string numbers = fmt::format("x{:.3f} [{:.3f}, {:.3f}] vs {}", o.speedup, o.ci_low, o.ci_high, best_label);
    if (o.verdict == measure::ab_verdict::faster) {
        c.status = iteration_status::positive;
        c.reason = "FASTER: " + numbers;
    } else {
        c.status = iteration_status::negative;
        c.reason = measure::to_string(o.verdict) + ": " + numbers;
    }
    return c;
}

}  // namespace kloop::loop
