// kloop platform: independent jobs run as a Slurm job array — Slurm as the multi-host engine.
//
// Responsibility: the cluster half of "evaluate on every GPU": kloop does not schedule a cluster,
// Slurm does. Each task is a command line and the record file it writes; run_slurm_array writes
// one script per task and an array script into a state directory (which must be on a filesystem
// the compute nodes share), submits `sbatch --parsable --array=<missing tasks> --gres=<gres>`
// (one GPU per task by default, so Slurm pins it and sets CUDA_VISIBLE_DEVICES), waits for the
// job to leave the queue (`squeue -h -j <id>`), and reads back per task: whether its record
// exists, and the device and host it ran on (`task-<i>.device`, `task-<i>.host`, written by the
// task script), and the tail of its output when it wrote no record.
//
// Resume: slurm_state.json in the state directory holds the job id and the task command lines.
// A second call with the same directory and the same tasks does not submit again while that
// job is still queued or running — it waits for it — and afterwards submits only the tasks
// whose record is missing. The same directory with different tasks is refused (usage_error).
// A kloop killed while it waited therefore loses nothing: Slurm keeps running the job.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "platform/subprocess.hpp"

namespace kloop::platform {

struct slurm_task {
    std::vector<std::string> argv;         // run as is, from the state directory
    std::filesystem::path record;          // the file it writes (absolute); its presence = done
};

struct slurm_options {
    std::filesystem::path state_dir;       // shared with the compute nodes
    std::string gres = "gpu:1";            // "" = no --gres (CPU tasks)
    std::string partition;                 // "" = the default partition
    std::string time_limit;                // --time, e.g. "00:30:00"; "" = the partition's
    std::vector<std::string> extra_args;   // more sbatch arguments, as given
    double poll_s = 2.0;                   // between squeue calls
    double max_wait_s = 0;                 // 0 = wait as long as the job runs
};

struct slurm_task_result {
    bool done = false;                     // the record exists
    std::string device;                    // CUDA_VISIBLE_DEVICES in the task ("" if none)
    std::string host;                      // the node it ran on
    std::string output_tail;               // the task's stdout+stderr tail when it wrote no record
};

struct slurm_outcome {
    std::vector<std::string> job_ids;      // every job this call waited for or submitted, in order
    bool resumed = false;                  // an earlier call's job was found in the state directory
    std::vector<slurm_task_result> tasks;
};

// Throws usage_error for a sbatch that cannot start or refuses the job (its message), a state
// directory holding other tasks, or waiting past max_wait_s; kloop::error (interrupted) on SIGINT
// (the job keeps running; call again to resume).
[[nodiscard]] slurm_outcome run_slurm_array(const std::vector<slurm_task>& tasks, const slurm_options& options,
                                            command_runner_base& commands);

// `'a b'` → a shell word for bash (single quotes, ' as '\'').
[[nodiscard]] std::string shell_word(const std::string& s);

}  // namespace kloop::platform
