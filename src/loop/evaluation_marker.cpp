// kloop loop: marks of evaluations in progress (see evaluation_marker.hpp).
#include "loop/evaluation_marker.hpp"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/iteration_summary.hpp"
#include "loop/repo_git.hpp"
#include "platform/file_io.hpp"
#include "platform/sha256.hpp"
#include "platform/utc_time.hpp"

namespace kloop::loop {

namespace fs = std::filesystem;
using nlohmann::json;

evaluation_marker::evaluation_marker(fs::path staging, const iteration_record& r)
    : m_file(std::move(staging) / evaluation_marker_name) {
    const json mark = {{"pid", static_cast<long>(::getpid())}, {"started_at", platform::utc_now_iso8601()}, {"iteration", to_json(r)}};
    platform::write_file_atomic(m_file, mark.dump(2) + "\n");
}

evaluation_marker::~evaluation_marker() {
    std::error_code ec;
    fs::remove(m_file, ec);
}

namespace {

// The iteration a mark describes, rejected for the death of its kloop; false when the mark does
// not fit this workspace (malformed, a number already recorded, a missing or changed candidate copy).
bool abandoned_iteration(const fs::path& staging, int next_number, iteration_record& r) {
    json mark;
    try {
        mark = json::parse(platform::read_file(staging / evaluation_marker_name));
        r = iteration_record_from_json(mark.at("iteration"));
    } catch (const std::exception&) {
        return false;
    }
    const fs::path copy = staging / r.candidate_file;
    if (r.number < next_number || r.candidate_file.empty() || !fs::is_regular_file(copy) ||
        platform::sha256_file(copy) != r.candidate_sha256)
        return false;
    reject_as_died(r, fmt::format("kloop (pid {}) died while evaluating it (started {}); recorded as rejected by the next command",
                                  mark.value("pid", 0L), mark.value("started_at", std::string("?"))));
    return true;
}

}  // namespace

void reject_as_died(iteration_record& r, const std::string& reason) {
    r.status = iteration_status::rejected;
    r.rejection = rejection_kind::crash;
    r.reason = reason;
    r.gate_pass = false;
    r.bench_ok = false;
    r.bench.clear();
    r.ab.clear();
    r.overall.reset();
    r.profile_facts.clear();
    score_predictions(r);
    r.recorded_at = platform::utc_now_iso8601();
}

std::vector<std::string> record_abandoned_evaluations(const workspace& ws, const std::string& op, int next_number,
                                                      const record_origin& origin, const fs::path& candidate,
                                                      platform::command_runner_base& runner) {
    std::vector<std::string> notes;
    std::vector<std::pair<iteration_record, fs::path>> marked;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(ws.root(), ec)) {
        if (entry.path().filename().string().rfind(".staging-", 0) != 0 || !fs::exists(entry.path() / evaluation_marker_name))
            continue;
        iteration_record r;
        if (abandoned_iteration(entry.path(), next_number, r)) marked.emplace_back(std::move(r), entry.path());
    }
    // In the order they were numbered, each taking the next number: a sibling evaluated at once
    // that finished before the death left no mark, and its number goes to the next marked one.
    std::sort(marked.begin(), marked.end(), [](const auto& a, const auto& b) { return a.first.number < b.first.number; });
    for (auto& [r, staging] : marked) {
        if (r.number != next_number)
            r.reason += fmt::format(" (numbered {} when it started: a sibling evaluated beside it left no mark)",
                                    version_label(r.number));
        r.number = next_number;
        r.git = commit_snapshot(candidate, staging / r.candidate_file, commit_message(op, r), runner, r.local_files);
        const json body = {{"iteration", to_json(r)}, {"evaluation", nullptr}, {"ab", nullptr}};
        write_record(staging / "benchmark_result.json", "kloop.iteration", body, origin);
        platform::write_file_atomic(staging / "iteration_summary.md", report::iteration_summary_md(r, op));
        fs::remove(staging / evaluation_marker_name);
        fs::rename(staging, ws.iteration_dir(r.number));
        notes.push_back(fmt::format("{}: {}", version_label(r.number), r.reason));
        ++next_number;
    }
    return notes;
}

}  // namespace kloop::loop
