// kloop eval: spawning kloop-runner and reading its events.
#include "eval/runner_session.hpp"

#include <fstream>
#include <map>
#include <set>

#include "eval/runner_progress.hpp"
#include "platform/file_io.hpp"

namespace kloop::eval {

namespace {

// The last `max_lines` lines of `text`, and at most `max_bytes` of them.
std::string tail_lines(const std::string& text, std::size_t max_lines, std::size_t max_bytes) {
    std::size_t pos = text.size();
    std::size_t lines = 0;
    while (pos > 0) {
        const auto nl = text.rfind('\n', pos - 1);
        if (nl == std::string::npos) { pos = 0; break; }
        if (nl + 1 < text.size() && ++lines > max_lines) { pos = nl + 1; break; }
        pos = nl;
    }
    if (text.size() - pos > max_bytes) pos = text.size() - max_bytes;
    return text.substr(pos);
}

}  // namespace

std::string find_inconsistency(const std::vector<runner::event>& events) {
    std::map<runner::event_kind, std::set<int>> results;  // result event kind → ids seen
    std::set<int> started;
    bool done = false;
    for (std::size_t i = 0; i < events.size(); ++i) {
        const auto kind = runner::kind_of(events[i]);
        const auto name = runner::to_string(kind);
        if (done) return "a line after the runner's \"done\" (" + name + ")";
        if (i == 0 && kind != runner::event_kind::start && kind != runner::event_kind::fatal)
            return "the first line is not the runner's \"start\"";
        if (i > 0 && kind == runner::event_kind::start) return "a second \"start\"";
        if (kind == runner::event_kind::done) done = true;
        const bool is_result = kind == runner::event_kind::case_result || kind == runner::event_kind::bench_result ||
                               kind == runner::event_kind::ab_result || kind == runner::event_kind::profile_result;
        const bool is_start = std::holds_alternative<runner::item_start_event>(events[i]);
        if (!is_result && !is_start) continue;
        const int id = *runner::item_of(events[i]);
        if (is_start && !started.insert(id).second) return "a second " + name + " for id " + std::to_string(id);
        if (is_result) {
            if (started.count(id) == 0) return "a " + name + " for id " + std::to_string(id) + " that never started";
            if (!results[kind].insert(id).second) return "a second " + name + " for id " + std::to_string(id);
        }
    }
    return {};
}

const runner::start_event* start_of(const std::vector<runner::event>& events) {
    for (const auto& e : events)
        if (const auto* s = std::get_if<runner::start_event>(&e)) return s;
    return nullptr;
}

std::string runner_session::describe_failure() const {
    if (!inconsistency.empty()) return "the runner's records are inconsistent: " + inconsistency;
    if (!fatal.empty()) return fatal;
    if (!process.started) return process.describe();
    if (process.timed_out || process.term_signal != 0 || process.interrupted) return process.describe();
    if (!finished) {
        std::string d = "the runner stopped early (" + process.describe() + ")";
        if (!output_tail.empty()) d += ": " + output_tail;
        return d;
    }
    return {};
}

runner_session run_runner(const backend::op_backend& be, const runner::job& job, const std::filesystem::path& scratch_dir, double timeout_s,
                          platform::command_runner_base& commands, const std::vector<std::string>& wrapper,
                          std::size_t max_output_bytes, std::size_t max_memory_bytes, progress_sink* progress) {
    const auto tag = runner::to_string(job.phase);
    const auto job_path = scratch_dir / (tag + "_job.json");
    const auto events_path = scratch_dir / (tag + "_events.jsonl");
    const auto stdout_log = scratch_dir / (tag + "_runner.stdout.log");
    const auto stderr_log = scratch_dir / (tag + "_runner.stderr.log");
    platform::write_file_atomic(job_path, nlohmann::json(job).dump(1));
    std::filesystem::remove(events_path);

    platform::process_request req;
    req.argv = wrapper;
    be.launch(req, backend::launch_inputs{job, job_path, events_path, !wrapper.empty(), max_memory_bytes});
    req.cwd = scratch_dir;
    req.timeout_s = timeout_s;
    req.stdout_file = stdout_log;
    req.stderr_file = stderr_log;
    req.max_file_bytes = max_output_bytes;

    runner_session s;
    {
        runner_follower follower(events_path, job, progress);  // the live display, while it runs
        s.process = commands.run(req);
    }

    std::ifstream in(events_path);
    std::string line;
    bool torn = false;
    std::size_t line_no = 0;
    while (std::getline(in, line)) {
        ++line_no;
        if (line.empty()) continue;
        if (torn) {  // a line after a torn one: not a runner that died mid-write
            s.inconsistency = "a malformed line in the middle of the events";
            break;
        }
        auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded() || !j.is_object()) {
            torn = true;  // a torn last line: the runner died mid-write
            continue;
        }
        try {
            s.events.push_back(runner::event_from_json(j));
        } catch (const runner::event_error& e) {
            s.inconsistency = "line " + std::to_string(line_no) + ": " + e.what();
            break;
        }
    }
    if (s.inconsistency.empty()) s.inconsistency = find_inconsistency(s.events);
    for (const auto& ev : s.events) {
        if (std::holds_alternative<runner::done_event>(ev)) s.finished = true;
        if (const auto* f = std::get_if<runner::fatal_event>(&ev)) s.fatal = f->message;
    }
    if (!s.inconsistency.empty()) s.finished = false;
    const auto& tail = s.process.stderr_tail.empty() ? s.process.stdout_tail : s.process.stderr_tail;
    s.output_tail = tail_lines(tail, 20, 4096);
    return s;
}

}  // namespace kloop::eval
