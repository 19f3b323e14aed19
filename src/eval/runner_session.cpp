// kloop eval: spawning kloop-runner and reading its events.
#include "eval/runner_session.hpp"

#include <fstream>

#include "backend/build_dispatch.hpp"
#include "backend/python/fork_server.hpp"
#include "backend/python/python_worker.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"

namespace kloop::eval {

namespace {

std::string tail_lines(const std::string& text, std::size_t max_lines) {
    std::size_t pos = text.size();
    std::size_t lines = 0;
    while (pos > 0) {
        const auto nl = text.rfind('\n', pos - 1);
        if (nl == std::string::npos) { pos = 0; break; }
        if (nl + 1 < text.size() && ++lines > max_lines) { pos = nl + 1; break; }
        pos = nl;
    }
    return text.substr(pos);
}

}  // namespace

std::string runner_session::describe_failure() const {
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

runner_session run_runner(const runner::job& job, const std::filesystem::path& scratch_dir, double timeout_s,
                          platform::command_runner_base& commands, const std::vector<std::string>& wrapper) {
    const auto tag = runner::to_string(job.phase);
    const auto job_path = scratch_dir / (tag + "_job.json");
    const auto events_path = scratch_dir / (tag + "_events.jsonl");
    const auto log_path = scratch_dir / (tag + "_runner.log");
    platform::write_file_atomic(job_path, nlohmann::json(job).dump(1));
    std::filesystem::remove(events_path);

    platform::process_request req;
    // kloop-runner for CPU jobs; kloop-runner-cuda when either side runs on the GPU.
    const auto tool = backend::runner_tool_for(job.candidate_device, job.reference_device);
    req.argv = wrapper;
    if (job.candidate_device == backend::python::worker_device) {
        // Python libraries are manifests; the worker (<python> -m kloop_worker) speaks the same
        // job and event protocol (backend/python/python_worker.hpp, docs/python.md).
        auto py = backend::python::worker_command_for(job.candidate_lib, job_path, events_path);
        req.argv.insert(req.argv.end(), py.argv.begin(), py.argv.end());
        req.env_overrides = std::move(py.env);
        if (wrapper.empty()) backend::python::route_through_fork_server(req, py.worker_dir, py.may_use_torch);
    } else {
        for (auto a : {platform::sibling_tool(tool).string(), std::string("--job"), job_path.string(),
                       std::string("--events"), events_path.string()})
            req.argv.push_back(std::move(a));
    }
    req.cwd = scratch_dir;
    req.timeout_s = timeout_s;
    req.stdout_file = log_path;
    req.stderr_file = log_path;

    runner_session s;
    s.process = commands.run(req);

    std::ifstream in(events_path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        auto ev = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (ev.is_discarded()) break;  // a torn last line: the runner died mid-write
        const auto kind = ev.value("event", "");
        if (kind == "done") s.finished = true;
        if (kind == "fatal") s.fatal = ev.value("message", "");
        s.events.push_back(std::move(ev));
    }
    if (std::filesystem::exists(log_path)) {
        std::string log;
        try {
            log = platform::read_file(log_path);
        } catch (const std::exception&) {
        }
        s.output_tail = tail_lines(log, 20);
    }
    return s;
}

}  // namespace kloop::eval
