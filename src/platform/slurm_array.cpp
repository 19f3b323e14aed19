// kloop platform: a Slurm job array of independent tasks, resumable (see slurm_array.hpp).
#include "platform/slurm_array.hpp"

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/text.hpp"
#include "platform/file_io.hpp"

namespace kloop::platform {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string read_if_exists(const fs::path& p) {
    std::ifstream in(p);
    if (!in) return {};
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string tail(const std::string& s, std::size_t n) { return s.size() > n ? s.substr(s.size() - n) : s; }

json tasks_json(const std::vector<slurm_task>& tasks) {
    json j = json::array();
    for (const auto& t : tasks) j.push_back({{"argv", t.argv}, {"record", t.record.string()}});
    return j;
}

// True while `job` is queued or running.
bool in_queue(const std::string& job, command_runner_base& commands) {
    process_request req;
    req.argv = {"squeue", "-h", "-j", job, "-o", "%i"};
    req.timeout_s = 60;
    const auto r = commands.run(req);
    if (!r.started) throw usage_error("cannot run squeue: " + r.spawn_error);
    if (r.interrupted) throw error(exit_code::interrupted, "interrupted");
    // squeue exits non-zero for a job id it no longer knows: gone.
    return r.succeeded() && !trimmed(r.stdout_text).empty();
}

void wait_for(const std::string& job, const slurm_options& o, command_runner_base& commands) {
    const auto start = std::chrono::steady_clock::now();
    while (in_queue(job, commands)) {
        if (interrupt_requested()) throw error(exit_code::interrupted, "interrupted (Slurm job " + job + " keeps running)");
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (o.max_wait_s > 0 && waited > o.max_wait_s)
            throw usage_error(fmt::format("Slurm job {} still queued or running after {:.0f} s; call again with the "
                                          "same state directory to go on waiting",
                                          job, waited));
        std::this_thread::sleep_for(std::chrono::duration<double>(o.poll_s));
    }
}

void write_scripts(const std::vector<slurm_task>& tasks, const fs::path& dir) {
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        std::string s = "#!/bin/bash\n# kloop task " + std::to_string(i) + " (platform/slurm_array)\n";
        s += "echo \"${CUDA_VISIBLE_DEVICES:-}\" > " + shell_word((dir / ("task-" + std::to_string(i) + ".device")).string()) + "\n";
        s += "hostname > " + shell_word((dir / ("task-" + std::to_string(i) + ".host")).string()) + "\n";
        s += "exec";
        for (const auto& a : tasks[i].argv) s += " " + shell_word(a);
        s += "\n";
        write_file_atomic(dir / ("task-" + std::to_string(i) + ".sh"), s);
    }
    write_file_atomic(dir / "array.sh", "#!/bin/bash\n# kloop: one array task per evaluation (platform/slurm_array)\n"
                                        "exec bash \"" + dir.string() + "/task-${SLURM_ARRAY_TASK_ID}.sh\"\n");
}

std::string submit(const std::vector<std::size_t>& which, const slurm_options& o, command_runner_base& commands) {
    std::string list;
    for (auto i : which) list += (list.empty() ? "" : ",") + std::to_string(i);
    process_request req;
    req.argv = {"sbatch", "--parsable", "--job-name=kloop", "--array=" + list,
                "--output=" + (o.state_dir / "task-%a.out").string(), "--chdir=" + o.state_dir.string()};
    if (!o.gres.empty()) req.argv.push_back("--gres=" + o.gres);
    if (!o.partition.empty()) req.argv.push_back("--partition=" + o.partition);
    if (!o.time_limit.empty()) req.argv.push_back("--time=" + o.time_limit);
    req.argv.insert(req.argv.end(), o.extra_args.begin(), o.extra_args.end());
    req.argv.push_back((o.state_dir / "array.sh").string());
    req.timeout_s = 120;
    const auto r = commands.run(req);
    if (!r.started) throw usage_error("option --slurm: cannot run sbatch: " + r.spawn_error);
    if (!r.succeeded())
        throw usage_error("option --slurm: sbatch refused the job (" + r.describe() + "): " + trimmed(r.stderr_text));
    std::string id = trimmed(r.stdout_text);
    if (const auto semi = id.find(';'); semi != std::string::npos) id = id.substr(0, semi);  // "id;cluster"
    if (id.empty()) throw usage_error("option --slurm: sbatch printed no job id");
    return id;
}

}  // namespace

std::string shell_word(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

slurm_outcome run_slurm_array(const std::vector<slurm_task>& tasks, const slurm_options& o, command_runner_base& commands) {
    slurm_outcome out;
    ensure_directory(o.state_dir);
    const fs::path state_file = o.state_dir / "slurm_state.json";
    json state = {{"schema", 1}, {"tasks", tasks_json(tasks)}, {"jobs", json::array()}};
    if (fs::exists(state_file)) {
        const json old = json::parse(read_if_exists(state_file), nullptr, false);
        if (old.is_discarded() || !old.is_object() || old.value("tasks", json()) != state.at("tasks"))
            throw usage_error("option --slurm: '" + o.state_dir.string() +
                              "' holds another run's Slurm state (slurm_state.json): use an empty directory");
        state["jobs"] = old.value("jobs", json::array());
        // An earlier call's job: wait for it before deciding what is missing.
        if (!state["jobs"].empty()) {
            out.resumed = true;
            const std::string last = state["jobs"].back().get<std::string>();
            out.job_ids.push_back(last);
            wait_for(last, o, commands);
        }
    }
    write_scripts(tasks, o.state_dir);
    std::vector<std::size_t> missing;
    for (std::size_t i = 0; i < tasks.size(); ++i)
        if (!fs::exists(tasks[i].record)) missing.push_back(i);
    if (!missing.empty()) {
        const std::string id = submit(missing, o, commands);
        state["jobs"].push_back(id);
        write_file_atomic(state_file, state.dump(2) + "\n");  // before waiting: a kill now resumes
        out.job_ids.push_back(id);
        wait_for(id, o, commands);
    } else {
        write_file_atomic(state_file, state.dump(2) + "\n");
    }
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        slurm_task_result t;
        t.done = fs::exists(tasks[i].record);
        t.device = trimmed(read_if_exists(o.state_dir / ("task-" + std::to_string(i) + ".device")));
        t.host = trimmed(read_if_exists(o.state_dir / ("task-" + std::to_string(i) + ".host")));
        if (!t.done) t.output_tail = tail(read_if_exists(o.state_dir / ("task-" + std::to_string(i) + ".out")), 2000);
        out.tasks.push_back(std::move(t));
    }
    return out;
}

}  // namespace kloop::platform
