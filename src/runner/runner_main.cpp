// kloop runner: argv → job → executors → run_job (or, with --serve-candidate, a candidate host).
#include "runner/runner_main.hpp"

#include <cstdio>
#include <exception>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "platform/file_io.hpp"
#include "runner/candidate_host.hpp"
#include "runner/event_writer.hpp"
#include "runner/job.hpp"
#include "runner/remote_executor.hpp"
#include "runner/runner.hpp"

namespace kloop::runner {

int runner_main(int argc, char** argv, const executor_factory& make_executor) {
    if (is_candidate_host_command(argc, argv)) return serve_candidate(argc, argv, make_executor);
    std::string job_path, events_path;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--job") job_path = argv[i + 1];
        else if (flag == "--events") events_path = argv[i + 1];
    }
    if (job_path.empty() || events_path.empty()) {
        std::fprintf(stderr, "usage: %s --job JOB.json --events EVENTS.jsonl\n", argc > 0 ? argv[0] : "kloop-runner");
        return 2;
    }
    job j;
    try {
        j = nlohmann::json::parse(platform::read_file(job_path)).get<job>();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kloop-runner: error: bad job '%s': %s\n", job_path.c_str(), e.what());
        return 2;
    }
    try {
        event_writer events(events_path);
        std::unique_ptr<executor_base> ref;
        try {
            ref = make_executor(j.reference_device);
        } catch (const std::exception& e) {
            events.write(fatal_event{std::string("cannot use the device: ") + e.what()});
            return 3;
        }
        if (!ref) {  // the candidate's device is checked by its host (remote_executor::add_host)
            events.write(fatal_event{"this runner cannot run '" + j.reference_device +
                                     "' libraries (kloop-runner runs cpu; kloop-runner-cuda runs cuda)"});
            return 3;
        }
        remote_options opts;
        opts.device = j.candidate_device;
        opts.runner_exe = std::filesystem::read_symlink("/proc/self/exe");
        opts.scratch_root = std::filesystem::current_path();
        opts.census = j.phase == job_phase::gate && j.candidate_device == "cuda";
        opts.under_profiler = j.phase == job_phase::profile;
        // On a GPU the checker allocates and copies the candidate's buffers itself (CUDA IPC),
        // on the reference's executor when it runs on the same device.
        std::unique_ptr<executor_base> device_memory;
        if (j.candidate_device != "cpu") {
            if (j.reference_device == j.candidate_device) {
                opts.device_memory = ref.get();
            } else {
                try {
                    device_memory = make_executor(j.candidate_device);
                } catch (const std::exception&) {
                    device_memory.reset();  // the host reports the device; its copies are used
                }
                opts.device_memory = device_memory.get();
            }
        }
        remote_executor candidates(opts);
        return run_job(j, events, candidates, *ref);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "kloop-runner: error: %s\n", e.what());
        return 2;
    }
}

}  // namespace kloop::runner
