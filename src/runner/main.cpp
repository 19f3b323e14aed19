// kloop-runner: the child process that loads a candidate. Thin: parse argv, read the job, run it.
//   kloop-runner --job JOB.json --events EVENTS.jsonl
// Exit status: 0 job ran to the end, 2 bad arguments or job, 3 library/entry point not loadable.
#include <cstdio>
#include <exception>
#include <string>

#include <nlohmann/json.hpp>

#include "platform/file_io.hpp"
#include "runner/event_writer.hpp"
#include "runner/job.hpp"
#include "runner/runner.hpp"

int main(int argc, char** argv) {
    std::string job_path, events_path;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--job") job_path = argv[i + 1];
        else if (flag == "--events") events_path = argv[i + 1];
    }
    if (job_path.empty() || events_path.empty()) {
        std::fprintf(stderr, "usage: kloop-runner --job JOB.json --events EVENTS.jsonl\n");
        return 2;
    }
    try {
        const auto j = nlohmann::json::parse(kloop::platform::read_file(job_path)).get<kloop::runner::job>();
        kloop::runner::event_writer events(events_path);
        return kloop::runner::run_job(j, events);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kloop-runner: error: %s\n", e.what());
        return 2;
    }
}
